package dev.sluice.hazelcast;

import static org.assertj.core.api.Assertions.assertThat;

import com.hazelcast.core.HazelcastInstance;
import dev.sluice.Decision;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Ticker;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The cluster's view of time (docs/hazelcast.md, "Time"): on the members' clocks the owner's decides
 * whichever member or client calls, and an entry that moves to a member whose clock is behind keeps
 * counting; on callers' clocks (a supplied ticker) callers whose clocks are apart share one budget
 * and never admit more than the limit per window, the windows shifted by at most the skew.
 */
class HazelcastClockTest {
  private static final long SKEW_MICROS = 5_000_000;
  private static final long WINDOW_MICROS = 60_000_000;

  @Test void onTheMembersClocksTheOwnersDecidesAndAMoveToASlowerMemberKeepsTheCount() {
    try (Cluster c = Cluster.start(5851, 0)) {
      HazelcastInstance fast = c.addMember(() -> Ticker.system().nowMicros() + SKEW_MICROS);
      HazelcastInstance slow = c.addMember(null);
      c.awaitSize(2);
      Policy p = Policy.fixedWindow("skew-" + UUID.randomUUID(), 10, Duration.ofMinutes(1));
      String key = Budgets.ownedBy(fast, p);
      try (HazelcastRateLimiter viaSlow = HazelcastRateLimiter.builder(p, slow).timeout(Duration.ofSeconds(5)).build();
           HazelcastRateLimiter viaFast = HazelcastRateLimiter.builder(p, fast).timeout(Duration.ofSeconds(5)).build()) {
        long before = Ticker.system().nowMicros();
        Decision first = viaSlow.tryAcquire(key, 6);
        Decision second = viaFast.tryAcquire(key, 4);
        assertThat(first.allowed()).isTrue();
        assertThat(second.allowed()).isTrue();
        // Both decided on the owner's (fast) clock: one window, opened SKEW ahead of the slow caller's clock.
        assertThat(second.resetAt()).isEqualTo(first.resetAt());
        assertThat(ChronoUnit.MICROS.between(Instant.EPOCH, first.resetAt()) - WINDOW_MICROS).isGreaterThanOrEqualTo(before + SKEW_MICROS);
        assertThat(viaSlow.tryAcquire(key).reason()).isEqualTo(Reason.LIMIT_EXCEEDED);

        fast.shutdown(); // graceful: the entry moves to the slow member, whose clock is SKEW behind the state
        c.awaitSize(1);
        Decision after = viaSlow.tryAcquire(key);
        assertThat(after.reason()).as("the window opened on the fast clock still counts on the slow one: %s", after)
            .isEqualTo(Reason.LIMIT_EXCEEDED);
        assertThat(after.remaining()).isZero();
        assertThat(after.resetAt()).isEqualTo(first.resetAt());
      }
    }
  }

  @Test void callersWhoseClocksAreApartShareOneBudgetAndNeverAdmitMoreThanTheLimitPerWindow() {
    Cluster c = SharedCluster.get();
    Policy p = Policy.fixedWindow("skew-" + UUID.randomUUID(), 10, Duration.ofMinutes(1));
    long t = Ticker.system().nowMicros();
    ManualTicker ahead = ManualTicker.at(t + SKEW_MICROS);
    ManualTicker behind = ManualTicker.at(t);
    try (HazelcastRateLimiter a = HazelcastRateLimiter.builder(p, c.member(0)).ticker(ahead).timeout(Duration.ofSeconds(5))
             .expiryGrace(Duration.ofMinutes(10)).build();
         HazelcastRateLimiter b = HazelcastRateLimiter.builder(p, c.member(1)).ticker(behind).timeout(Duration.ofSeconds(5))
             .expiryGrace(Duration.ofMinutes(10)).build()) {
      int admitted = 0;
      for (int i = 0; i < 10; i++) {
        admitted += (a.tryAcquire("k").allowed() ? 1 : 0) + (b.tryAcquire("k").allowed() ? 1 : 0);
      }
      assertThat(admitted).as("first window, opened by the caller ahead").isEqualTo(10);

      ahead.advance(Duration.ofMinutes(1)); // the caller ahead is in its next window; the one behind still in the first
      behind.advance(Duration.ofMinutes(1));
      admitted = 0;
      int admittedBehind = 0;
      for (int i = 0; i < 10; i++) { // the caller behind asks first: it is still in the first window, which is full
        Decision db = b.tryAcquire("k");
        admittedBehind += db.allowed() ? 1 : 0;
        admitted += (a.tryAcquire("k").allowed() ? 1 : 0) + (db.allowed() ? 1 : 0);
      }
      System.out.printf("hazelcast skew: second window admitted %d, %d of them to the caller %d ms behind%n", admitted,
          admittedBehind, SKEW_MICROS / 1_000);
      assertThat(admitted).as("second window: the limit, whoever asks (the caller behind counts in the window the "
          + "caller ahead opened)").isEqualTo(10);
    }
  }
}
