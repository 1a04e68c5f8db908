package dev.sluice.hazelcast;

import static org.assertj.core.api.Assertions.assertThat;

import com.hazelcast.core.HazelcastInstance;
import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.kernel.Store;
import dev.sluice.kernel.StoreFactory;
import dev.sluice.kernel.StoreOptions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * 16 threads on one key, limit 1000, across two members (8 threads on a limiter of each), the key
 * owned by the third member so every step is a hop; on the members' clocks: exactly 1000 admitted,
 * every algorithm the backend runs. And a client and a member share one budget exactly.
 */
class HazelcastHotKeyTest {
  private static final int THREADS = 16;
  private static final long LIMIT = 1_000;
  private static final int ATTEMPTS_PER_THREAD = 100; // 1,600 attempts for 1,000 permits

  @Test void sixteenThreadsOnTwoMembersAdmitExactlyTheLimitOnEveryAlgorithm() throws Exception {
    Cluster c = SharedCluster.get();
    for (Policy p : Budgets.everyAlgorithm(LIMIT)) {
      String key = Budgets.ownedBy(c.member(2), p);
      try (HazelcastRateLimiter a = HazelcastRateLimiter.builder(p, c.member(0)).timeout(Duration.ofSeconds(10)).build();
           HazelcastRateLimiter b = HazelcastRateLimiter.builder(p, c.member(1)).timeout(Duration.ofSeconds(10)).build()) {
        long[] counts = hammer(List.of(a, b), key);
        System.out.printf("hazelcast hot key %s: %d admitted, %d refused, %d failed of %d attempts%n", p.algorithm().id(),
            counts[0], counts[1], counts[2], THREADS * ATTEMPTS_PER_THREAD);
        assertThat(counts[2]).as("%s: decisions that failed", p.algorithm().id()).isZero();
        assertThat(counts[0]).as("%s: admitted", p.algorithm().id()).isEqualTo(LIMIT);
        assertThat(a.peek(key).remaining()).isZero();
      }
    }
  }

  @Test void aClientAndAMemberShareOneBudget() throws Exception {
    Cluster c = SharedCluster.get();
    HazelcastInstance client = c.client();
    try {
      for (Policy p : Budgets.everyAlgorithm(LIMIT)) {
        try (HazelcastRateLimiter viaClient = HazelcastRateLimiter.builder(p, client).timeout(Duration.ofSeconds(10)).build();
             HazelcastRateLimiter viaMember = HazelcastRateLimiter.builder(p, c.member(0)).timeout(Duration.ofSeconds(10)).build()) {
          long[] counts = hammer(List.of(viaClient, viaMember), "shared");
          assertThat(counts[2]).isZero();
          assertThat(counts[0]).as("%s: admitted through a client and a member", p.algorithm().id()).isEqualTo(LIMIT);
        }
      }
    } finally {
      client.shutdown();
    }
  }

  @Test void theKernelOpensTheStoreByNameFromAUrl() {
    Cluster c = SharedCluster.get();
    Policy p = Budgets.everyAlgorithm(2).get(0);
    try (Store store = StoreFactory.named("hazelcast").open(StoreOptions.defaults()
        .withUrl("hazelcast://127.0.0.1:5811,127.0.0.1:5812/" + c.name()).withTimeout(Duration.ofSeconds(5)))) {
      assertThat(store.name()).isEqualTo("hazelcast");
      assertThat(store.shared()).isTrue();
      assertThat(Cluster.await(Duration.ofSeconds(30), () -> store.probe() == null)).as("the store answers").isTrue();
      RateLimiter l = store.limiter(p, dev.sluice.RateLimitListener.NONE);
      // The client starts without waiting for the cluster: until it has connected, decisions follow the failure mode.
      assertThat(Cluster.await(Duration.ofSeconds(30), () -> l.peek("k").path() == dev.sluice.Path.PRIMARY))
          .as("a peek decided on the store").isTrue();
      Decision first = l.tryAcquire("k", 2);
      assertThat(first.allowed()).as("%s", first).isTrue();
      assertThat(l.tryAcquire("k").reason()).isEqualTo(dev.sluice.Reason.LIMIT_EXCEEDED);
    }
  }

  /** Half the threads on each limiter, sync and async mixed; {admitted, refused, failed}. */
  static long[] hammer(List<? extends RateLimiter> limiters, String key) throws Exception {
    AtomicLong allowed = new AtomicLong();
    AtomicLong refused = new AtomicLong();
    AtomicLong failed = new AtomicLong();
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    CountDownLatch start = new CountDownLatch(1);
    List<Future<?>> done = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      RateLimiter l = limiters.get(t % limiters.size());
      boolean async = t % 4 == 3;
      done.add(pool.submit(() -> {
        start.await();
        for (int i = 0; i < ATTEMPTS_PER_THREAD; i++) {
          Decision d = async ? l.tryAcquireAsync(key, 1).toCompletableFuture().get() : l.tryAcquire(key);
          (d.allowed() ? allowed : d.reason() == dev.sluice.Reason.LIMIT_EXCEEDED ? refused : failed).incrementAndGet();
        }
        return null;
      }));
    }
    start.countDown();
    for (Future<?> f : done) {
      f.get(120, TimeUnit.SECONDS);
    }
    pool.shutdown();
    return new long[] {allowed.get(), refused.get(), failed.get()};
  }
}
