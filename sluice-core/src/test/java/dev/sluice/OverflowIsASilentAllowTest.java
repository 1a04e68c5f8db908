package dev.sluice;

import dev.sluice.testing.ManualTicker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.memory.MemoryRateLimiter;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Issue 14, finding 3: "overflow is a silent allow". Every parameter and every intermediate product
 * is bounded when a {@link Policy} is built, with a message that names the product and the fix, and a
 * clock stepped back never overflows a GCRA debt. The kit runs the edges of every bound and stepped-back
 * clocks on every backend ({@code BoundCases.overflowIsNotASilentAllowAtTheEdgesOfEveryBound},
 * {@code aClockSteppedBackNeverAdmitsWhatTheLatestReadingRefuses}).
 */
class OverflowIsASilentAllowTest {
  private static final long T0 = 1_700_000_000_000_000L;

  @Test
  void countsThatOverflowAreRefusedWhenThePolicyIsBuilt() {
    // fixedWindow(2^62, 1h) admitted four spends of 2^62; fixedWindow(Long.MAX_VALUE) a permit after Long.MAX_VALUE
    assertThatThrownBy(() -> Policy.fixedWindow("p", 1L << 62, Duration.ofHours(1))).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("fixed window: limit 4611686018427387904 exceeds 2^52 (4503599627370496), the exact-integer range every "
            + "backend counts in, where it would overflow; use a smaller limit, or a shorter window with a proportional limit");
    assertThatThrownBy(() -> Policy.fixedWindow("p", Long.MAX_VALUE, Duration.ofHours(1))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("fixed window: limit 9223372036854775807 exceeds 2^52");
    assertThatThrownBy(() -> Policy.slidingLog("p", 1L << 62, Duration.ofHours(1))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("sliding log: limit 4611686018427387904 exceeds 2^52");
    assertThatThrownBy(() -> Policy.tokenBucket("p", 10, Long.MAX_VALUE, Duration.ofSeconds(1))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("token bucket: refill tokens 9223372036854775807 exceeds 2^52");
    assertThatThrownBy(() -> Policy.gcra("p", Long.MAX_VALUE, Duration.ofSeconds(1), 10)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("gcra: burst 10 times period 1000000 (microseconds) plus rate 9223372036854775807 exceeds 2^52, the "
            + "exact-integer range every backend computes a debt in; use a smaller rate with a proportionally shorter period");
  }

  @Test
  void instantsTooFarAheadOfTheClockAreRefusedWhenThePolicyIsBuilt() {
    assertThatThrownBy(() -> Policy.fixedWindow("p", 1, Duration.ofDays(365L * 10))).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("window PT87600H is too long; at most 2^48 microseconds (about 8.9 years), so that every instant a limiter "
            + "computes ahead of its clock stays exact");
    assertThatThrownBy(() -> Policy.gcra("p", 1, Duration.ofDays(3000), 3)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("gcra: burst 3 times period 259200000000000 over rate 1 is 777600000000000 us, how far a full burst puts the "
            + "arrival time ahead of the clock, over 2^49 us (about 17.8 years); use a smaller burst, a shorter period or a higher rate");
    assertThatThrownBy(() -> Policy.tokenBucket("p", 3, 1, Duration.ofDays(3000))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("token bucket: capacity 3 times refill period 259200000000000 over refill tokens 1 is "
            + "777600000000000 us, the time an empty bucket takes to refill, over 2^49 us");
    // the largest numbers each bound accepts still build
    assertThat(Policy.fixedWindow("p", 1L << 52, Duration.ofMillis(1)).limit()).isEqualTo(1L << 52);
    assertThat(Policy.gcra("p", (1L << 52) - 1_000_000, Duration.ofSeconds(1), 1).limit()).isEqualTo(1);
    assertThat(Policy.tokenBucket("p", 1, 1L << 52, Duration.ofSeconds(1)).limit()).isEqualTo(1);
  }

  @Test
  void aGcraOfRateTenToTheTwelveAdmitsNothingExtraWithTheClockSteppedBack() {
    Policy p = Policy.gcra("fast", 1_000_000_000_000L, Duration.ofHours(1), 1_000);
    ManualTicker t = ManualTicker.at(T0);
    MemoryRateLimiter l = MemoryRateLimiter.builder(p).ticker(t).build();
    assertThat(l.tryAcquire("k", 1_000).allowed()).isTrue();
    assertThat(l.tryAcquire("k").allowed()).isFalse();
    t.set(T0 - 10_000_000); // 10 s back: (TAT - now) x rate is 10^19, past Long.MAX_VALUE
    int admitted = 0;
    for (int i = 0; i < 1_001; i++) {
      if (l.tryAcquire("k").allowed()) {
        admitted++;
      }
    }
    assertThat(admitted).isZero();
    Decision d = l.tryAcquire("k");
    assertThat(d.reason()).isEqualTo(Reason.LIMIT_EXCEEDED);
    assertThat(d.retryAfter()).isBetween(Duration.ofSeconds(10), Duration.ofMillis(10_001));
    t.set(T0);
    assertThat(l.tryAcquire("k").allowed()).isFalse();
  }

  @Test
  void aClockAtTheLastValidReadingStillDecides() {
    long last = (1L << 52) - (1L << 49);
    for (Policy p : new Policy[] {Policy.fixedWindow("f", 3, Duration.ofDays(3000)), Policy.slidingWindow("s", 3, Duration.ofDays(3000)),
        Policy.tokenBucket("b", 3, 2, Duration.ofDays(3000)), Policy.gcra("g", 1, Duration.ofDays(2000), 1),
        Policy.slidingLog("l", 3, Duration.ofDays(3000))}) {
      ManualTicker t = ManualTicker.at(last);
      MemoryRateLimiter l = MemoryRateLimiter.builder(p).ticker(t).build();
      assertThat(l.tryAcquire("k").allowed()).as("%s", p).isTrue();
      t.set(last + 1);
      assertThat(l.tryAcquire("k").reason()).as("%s", p).isEqualTo(Reason.INVALID_CLOCK);
    }
  }
}
