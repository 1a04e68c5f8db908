package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Every programmer error of a policy, with the exact message (built in dev.sluice.internal.Checks). */
class PolicyValidationTest {
  private static final Duration S = Duration.ofSeconds(1);

  @Test
  void blankAndMalformedNames() {
    assertThatThrownBy(() -> Policy.fixedWindow(null, 1, S)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("policy name null is blank; a policy needs a name such as \"login\" or \"api.search\"");
    assertThatThrownBy(() -> Policy.fixedWindow("  ", 1, S)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("policy name \"  \" is blank; a policy needs a name such as \"login\" or \"api.search\"");
    assertThatThrownBy(() -> Policy.fixedWindow("has space", 1, S)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("policy name \"has space\" is malformed; it must match [A-Za-z0-9][A-Za-z0-9._:-]{0,63}");
    assertThatThrownBy(() -> Policy.fixedWindow("-lead", 1, S)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("is malformed");
    assertThatThrownBy(() -> Policy.fixedWindow("x".repeat(65), 1, S)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("is malformed");
    assertThat(Policy.fixedWindow("api.search:v2_x-1", 1, S).name()).isEqualTo("api.search:v2_x-1");
  }

  @Test
  void nonPositiveLimits() {
    assertThatThrownBy(() -> Policy.fixedWindow("p", 0, S)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("limit 0 is not positive; it must be at least 1");
    assertThatThrownBy(() -> Policy.slidingWindow("p", -3, S)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("limit -3 is not positive; it must be at least 1");
    assertThatThrownBy(() -> Policy.tokenBucket("p", 0, 1, S)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("capacity 0 is not positive; it must be at least 1");
    assertThatThrownBy(() -> Policy.tokenBucket("p", 5, 0, S)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("refill tokens 0 is not positive; it must be at least 1");
    assertThatThrownBy(() -> Policy.gcra("p", 0, S, 1)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("rate 0 is not positive; it must be at least 1");
    assertThatThrownBy(() -> Policy.gcra("p", 1, S, 0)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("burst 0 is not positive; it must be at least 1");
  }

  @Test
  void windowsUnderOneMillisecond() {
    assertThatThrownBy(() -> Policy.fixedWindow("p", 1, Duration.ofNanos(999_999))).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("window PT0.000999999S is under 1 ms; use at least Duration.ofMillis(1)");
    assertThatThrownBy(() -> Policy.slidingLog("p", 1, Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("window PT0S is under 1 ms; use at least Duration.ofMillis(1)");
    assertThatThrownBy(() -> Policy.fixedWindow("p", 1, Duration.ofSeconds(-1))).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("window PT-1S is under 1 ms; use at least Duration.ofMillis(1)");
    assertThatThrownBy(() -> Policy.tokenBucket("p", 1, 1, null)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("refill period is null; give a duration of at least 1 ms");
    assertThatThrownBy(() -> new Algorithm.FixedWindow(1, 999)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("window 999 us is under 1 ms; use at least 1000 microseconds");
    assertThat(Policy.fixedWindow("p", 1, Duration.ofMillis(1)).algorithm()).isEqualTo(new Algorithm.FixedWindow(1, 1000));
  }

  @Test
  void productsBeyondTheExactIntegerRangeAreRefused() {
    assertThatThrownBy(() -> Policy.tokenBucket("p", 1_000_000, 1_000_000, Duration.ofDays(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("token bucket: capacity 1000000 times refill period 86400000000 (microseconds) exceeds 2^52, "
            + "the exact-integer range every backend computes in; use a smaller capacity or a shorter refill period with proportional numbers");
    assertThatThrownBy(() -> Policy.slidingWindow("p", 100_000_000, Duration.ofDays(1))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("sliding window: limit 100000000 times window 86400000000");
    assertThatThrownBy(() -> Policy.gcra("p", 10, Duration.ofDays(1), 100_000_000)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("gcra: burst 100000000 times period 86400000000");
    assertThat(Policy.fixedWindow("p", 1L << 52, Duration.ofDays(365)).limit()).isEqualTo(1L << 52);
  }

  @Test
  void limitIsWhatOneCallCanAskFor() {
    assertThat(Policy.tokenBucket("p", 7, 1, S).limit()).isEqualTo(7);
    assertThat(Policy.gcra("p", 100, S, 9).limit()).isEqualTo(9);
    assertThat(Policy.slidingWindow("p", 5, S).limit()).isEqualTo(5);
  }
}
