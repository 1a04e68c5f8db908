package dev.sluice;

import dev.sluice.testing.ManualTicker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.memory.MemoryRateLimiter;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class DecisionAndFailureModeTest {
  private final Policy p = Policy.fixedWindow("p", 5, Duration.ofSeconds(1));

  @Test
  void retryAfterIsZeroWhenAllowedAndTheExactWaitWhenRefused() {
    assertThat(Decision.allowed(p, 3, 0, null).retryAfter()).isZero();
    assertThat(Decision.refused(p, Reason.LIMIT_EXCEEDED, 0, 0, 336).retryAfterMicros()).isEqualTo(336);
    assertThat(Decision.refused(p, Reason.LIMIT_EXCEEDED, 0, 0, 0).retryAfter()).isEqualTo(Duration.ofNanos(1_000));
    assertThat(Decision.refused(p, Reason.LIMIT_EXCEEDED, 0, 0, 2_500_000).retryAfter()).isEqualTo(Duration.ofMillis(2500));
    assertThat(Decision.refused(p, Reason.LIMIT_EXCEEDED, -4, 0, 0).remaining()).isZero();
  }

  /** Issue 13: Decision.of took three adjacent longs (remaining, reset, retry) that could be swapped unnoticed. */
  @Test
  void theBuilderSetsEachFieldByNameAndRefusesToGuessTheReset() {
    Ticket t = new Ticket.Issuer().issue(p, "k", 1, 0);
    Decision d = Decision.builder(p).refused(Reason.LIMIT_EXCEEDED).path(Path.NEAR_CACHE)
        .remaining(2).resetAtMicros(9_000).retryAfterMicros(700).build();
    assertThat(d).isEqualTo(Decision.refused(p, Reason.LIMIT_EXCEEDED, 2, 9_000, 700).withPath(Path.NEAR_CACHE));
    assertThat(d.limit()).isEqualTo(5);
    assertThat(d.ticket()).isEmpty();
    Decision a = Decision.builder(p).allowed(Reason.TIMEOUT).path(Path.FAILURE_MODE).resetAtMicros(5).retryAfterMicros(99).ticket(t).build();
    assertThat(a.allowed()).isTrue();
    assertThat(a.reason()).isEqualTo(Reason.TIMEOUT);
    assertThat(a.retryAfterMicros()).as("an allowance asks for no wait").isZero();
    assertThat(a.ticket()).containsSame(t);
    assertThat(Decision.builder(p).resetAtMicros(1).build()).isEqualTo(Decision.allowed(p, 0, 1, null));
    assertThat(Decision.builder(p).refused(Reason.TIMEOUT).resetAtMicros(1).build().retryAfterMicros()).isEqualTo(1);
    assertThatThrownBy(() -> Decision.builder(p).remaining(3).build()).isInstanceOf(IllegalStateException.class)
        .hasMessage("resetAtMicros was not set for a decision of policy 'p'; every decision says when its window ends "
            + "or its state is restored");
    assertThatThrownBy(() -> Decision.builder(p).refused(null)).isInstanceOf(NullPointerException.class).hasMessage("reason");
  }

  @Test
  void resetAtIsAnInstantOfEpochMicros() {
    Decision d = Decision.allowed(p, 1, 1_700_000_000_123_456L, null);
    assertThat(d.resetAt()).isEqualTo(Instant.parse("2023-11-14T22:13:20.123456Z"));
  }

  @Test
  void closedRefusesWithTheReasonAndItsRetryAfter() {
    Decision d = FailureMode.closed(Duration.ofMillis(250)).decide(p, "k", 1, Reason.TIMEOUT, null, 1_000_000);
    assertThat(d.allowed()).isFalse();
    assertThat(d.reason()).isEqualTo(Reason.TIMEOUT);
    assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
    assertThat(d.retryAfter()).isEqualTo(Duration.ofMillis(250));
    assertThat(d.ticket()).isEmpty();
    assertThatThrownBy(() -> FailureMode.closed(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("failure-mode retryAfter PT0S is under 1 ms; a refusal must ask for at least 1 ms");
  }

  /** Issue 13: open and fallback refused the always-closed reasons with closed()'s 1 s, not their own retry. */
  @Test
  void everyModeRefusesWithItsOwnConfiguredRetry() {
    RateLimiter local = MemoryRateLimiter.builder(p).ticker(ManualTicker.at(1_000_000)).build();
    for (FailureMode mode : List.of(FailureMode.closed(Duration.ofMillis(250)),
        FailureMode.open((pol, r, c) -> {}, Duration.ofMillis(250)), FailureMode.fallback(local, Duration.ofMillis(250)))) {
      Decision d = mode.decide(p, "k", 1, Reason.CONTENTION, null, 1_000_000);
      assertThat(d.allowed()).as("%s", mode).isFalse();
      assertThat(d.retryAfter()).as("%s", mode).isEqualTo(Duration.ofMillis(250));
      assertThat(mode.retryAfter()).isEqualTo(Duration.ofMillis(250));
    }
    assertThat(FailureMode.open((pol, r, c) -> {}).retryAfter()).isEqualTo(FailureMode.DEFAULT_CLOSED_RETRY);
  }

  /** Issue 13: a key the fallback rejects (over its length cap) threw from an outage instead of deciding. */
  @Test
  void aFallbackThatRejectsTheKeyFailsClosedInsteadOfThrowing() {
    RateLimiter local = MemoryRateLimiter.builder(p).ticker(ManualTicker.at(1_000_000)).build();
    FailureMode mode = FailureMode.fallback(local, Duration.ofMillis(300));
    String longKey = "k".repeat(MemoryRateLimiter.DEFAULT_MAX_KEY_LENGTH + 1);
    Decision d = mode.decide(p, longKey, 1, Reason.STORE_UNAVAILABLE, null, 1_000_000);
    assertThat(d.allowed()).isFalse();
    assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
    assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
    assertThat(d.retryAfter()).isEqualTo(Duration.ofMillis(300));
    assertThat(mode.peek(p, longKey, Reason.STORE_UNAVAILABLE, null, 1_000_000).path()).isEqualTo(Path.FAILURE_MODE);
  }

  @Test
  void openAllowsWithoutATicketAndAlertsEvenWhenTheHookThrows() {
    List<Reason> seen = new ArrayList<>();
    FailureMode open = FailureMode.open((policy, reason, cause) -> {
      seen.add(reason);
      throw new IllegalStateException("hook bug");
    });
    Decision d = open.decide(p, "k", 1, Reason.STORE_UNAVAILABLE, new RuntimeException("down"), 1);
    assertThat(d.allowed()).isTrue();
    assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
    assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
    assertThat(d.ticket()).isEmpty();
    assertThat(seen).containsExactly(Reason.STORE_UNAVAILABLE);
  }

  @Test
  void corruptStateInvalidClockAndContentionAlwaysFailClosed() {
    FailureMode open = FailureMode.open((policy, reason, cause) -> {});
    FailureMode fallback = FailureMode.fallback(MemoryRateLimiter.builder(p).build());
    for (FailureMode m : List.of(open, fallback)) {
      for (Reason r : List.of(Reason.CORRUPT_STATE, Reason.INVALID_CLOCK, Reason.CONTENTION)) {
        Decision d = m.decide(p, "k", 1, r, null, 1);
        assertThat(d.allowed()).as("%s under %s", r, m).isFalse();
        assertThat(d.reason()).isEqualTo(r);
      }
    }
  }

  @Test
  void fallbackDecidesLocallyAndSaysSo() {
    ManualTicker t = ManualTicker.at(1_000_000);
    FailureMode fallback = FailureMode.fallback(MemoryRateLimiter.builder(p).ticker(t).build());
    for (int i = 0; i < 5; i++) {
      Decision d = fallback.decide(p, "k", 1, Reason.STORE_UNAVAILABLE, null, 1);
      assertThat(d.allowed()).isTrue();
      assertThat(d.path()).isEqualTo(Path.FALLBACK);
    }
    assertThat(fallback.decide(p, "k", 1, Reason.STORE_UNAVAILABLE, null, 1).allowed()).isFalse();
  }

  @Test
  void failureReasonsAreTellable() {
    assertThat(Reason.LIMIT_EXCEEDED.isFailure()).isFalse();
    assertThat(Reason.KEY_TABLE_FULL.isFailure()).isFalse();
    assertThat(Reason.TIMEOUT.isFailure()).isTrue();
    assertThat(Reason.CORRUPT_STATE.isFailure()).isTrue();
  }

  @Test
  void systemTickerIsMonotonicAndNearTheWallClock() {
    Ticker t = Ticker.system();
    long a = t.nowMicros();
    long b = t.nowMicros();
    assertThat(b).isGreaterThanOrEqualTo(a);
    assertThat(Math.abs(a / 1000 - System.currentTimeMillis())).isLessThan(5_000);
  }
}
