package dev.sluice.hazelcast;

import com.hazelcast.core.HazelcastInstance;
import dev.sluice.Policy;
import java.time.Duration;
import java.util.List;
import java.util.UUID;

/** Policies whose budgets do not refill while a test runs, and keys owned by a chosen member. */
final class Budgets {
  private Budgets() {}

  /** Every algorithm the backend runs, {@code limit} permits that do not come back for a day. */
  static List<Policy> everyAlgorithm(long limit) {
    String n = "t-" + UUID.randomUUID();
    Duration day = Duration.ofDays(1);
    return List.of(Policy.fixedWindow(n + "-fw", limit, day), Policy.slidingWindow(n + "-sw", limit, day),
        Policy.tokenBucket(n + "-tb", limit, 1, day), Policy.gcra(n + "-gcra", 1, day, limit));
  }

  /** A key whose budget under {@code p} is owned by {@code owner} (waiting, at most 30 s, for the partitions to be assigned). */
  static String ownedBy(HazelcastInstance owner, Policy p) {
    if (!Cluster.await(Duration.ofSeconds(30), () -> owner.getPartitionService().getPartitions().stream()
        .allMatch(part -> part.getOwner() != null))) {
      throw new IllegalStateException("partitions not assigned in 30 s");
    }
    for (int i = 0; ; i++) {
      String key = "k" + i;
      if (owner.getCluster().getLocalMember().equals(
          owner.getPartitionService().getPartition(HazelcastRateLimiter.storedKey(p, key)).getOwner())) {
        return key;
      }
    }
  }
}
