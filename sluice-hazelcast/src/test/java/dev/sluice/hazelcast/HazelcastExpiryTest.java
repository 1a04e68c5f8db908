package dev.sluice.hazelcast;

import static org.assertj.core.api.Assertions.assertThat;

import com.hazelcast.core.EntryView;
import com.hazelcast.map.IMap;
import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.Refund;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * Entries expire when their state stops mattering: the processor sets each write's time to live from
 * {@code ReferenceModel.expiresAt} (plus the grace, here none, and the second a record's clock can
 * lose: {@link BudgetStep#RECORD_CLOCK_MILLIS}), a spent ticket keeps its entry until the ticket's
 * life ends, and an expired entry is gone from the map.
 */
class HazelcastExpiryTest {
  @Test void anEntryLivesAsLongAsItsStateOrItsSpentTicketsMatter() {
    Cluster c = SharedCluster.get();
    Policy p = Policy.fixedWindow("expiry-" + UUID.randomUUID(), 5, Duration.ofSeconds(2));
    IMap<String, Object> map = c.member(0).getMap(HazelcastRateLimiter.DEFAULT_MAP);
    try (HazelcastRateLimiter l = HazelcastRateLimiter.builder(p, c.member(1)).timeout(Duration.ofSeconds(5))
        .expiryGrace(Duration.ZERO).build()) {
      Decision d = l.tryAcquire("k", 2);
      assertThat(d.allowed()).isTrue();
      String id = HazelcastRateLimiter.storedKey(p, "k");
      EntryView<String, Object> acquired = map.getEntryView(id);
      assertThat(acquired).as("the entry right after its write (its record's clock is whole seconds)").isNotNull();
      assertThat(acquired.getTtl()).as("ttl after an acquire: the window's end and the record clock's second")
          .isBetween(2_000L, 3_000L); // at most 2 s rounded up to the second, and the record clock's second

      assertThat(l.refund(d.ticket().orElseThrow())).isEqualTo(Refund.APPLIED);
      EntryView<String, Object> refunded = map.getEntryView(id);
      assertThat(refunded.getTtl()).as("ttl after a refund: the ticket's life, two windows from its stamp")
          .isBetween(4_000L, 5_000L); // 4 s from the stamp at most, rounded up, and the record clock's second
      assertThat(((Budget) refunded.getValue()).spentCount()).isEqualTo(1);

      assertThat(Cluster.await(Duration.ofSeconds(15), () -> !map.containsKey(id))).as("the entry expired").isTrue();
    }
  }
}
