package dev.sluice.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Algorithm;
import org.junit.jupiter.api.Test;

/**
 * The rule by which Redis refuses a lagging supplied clock (issue 26, finding 6), on readings and
 * monotonic instants given by hand: one second of grace, a 100 ms fixed window.
 */
class ClockLagTest {
  private static final long T0 = 1_800_000_000_000_000L;
  private static final long MS = 1_000;
  private static final long GRACE = 1_000 * MS;
  private static final Algorithm WINDOW = new Algorithm.FixedWindow(1, 100 * MS);

  @Test
  void aClockInStepWithTheMonotonicClockIsAlwaysAdmitted() {
    ClockLag lag = new ClockLag(GRACE);
    for (long n = 0; n < 10_000 * MS; n += 7 * MS) {
      assertThat(lag.admits(WINDOW, T0 + n, n, true)).as("at %d us", n).isTrue();
    }
  }

  /** The case: a write at T0 + 10 ms, then T0 + 50 ms read 1.5 s of wall time later. */
  @Test
  void aStoppedClockIsRefusedOnceItLagsByMoreThanTheGraceWhileItsStatesStillCount() {
    ClockLag lag = new ClockLag(GRACE);
    assertThat(lag.admits(WINDOW, T0 + 10 * MS, 0, true)).isTrue();
    assertThat(lag.admits(WINDOW, T0 + 50 * MS, 1_040 * MS, true)).as("lags by exactly the grace").isTrue();
    assertThat(lag.admits(WINDOW, T0 + 50 * MS, 1_500 * MS, true)).as("lags by 1.46 s").isFalse();
    assertThat(lag.admits(WINDOW, T0 + 50 * MS, 1_500 * MS, false)).as("a peek alike").isFalse();
    assertThat(lag.admits(WINDOW, T0 + 10 * MS + 1_500 * MS, 1_500 * MS, true)).as("caught up").isTrue();
  }

  @Test
  void aClockSteppedBackIsRefusedUntilEveryStateItWroteBeforeHasEnded() {
    ClockLag lag = new ClockLag(GRACE);
    assertThat(lag.admits(WINDOW, T0, 0, true)).isTrue();
    long back = 5_000 * MS; // the clock steps back 5 s, for good
    assertThat(lag.admits(WINDOW, T0 + 50 * MS - back, 50 * MS, true)).isFalse();
    assertThat(lag.admits(WINDOW, T0 + 99 * MS, 99 * MS + back, true)).as("the state written at T0 still counts").isFalse();
    assertThat(lag.admits(WINDOW, T0 + 100 * MS, 100 * MS + back, true)).as("it has ended").isTrue();
    for (long n = 101 * MS; n < 1_000 * MS; n += 13 * MS) {
      assertThat(lag.admits(WINDOW, T0 + n, n + back, true)).as("on the new offset, at %d us", n).isTrue();
    }
  }

  @Test
  void aPeekRecordsNothing() {
    ClockLag lag = new ClockLag(GRACE);
    assertThat(lag.admits(WINDOW, T0 + 10 * MS, 10 * MS, false)).isTrue();
    assertThat(lag.admits(WINDOW, T0 + 20 * MS, 2_000 * MS, true)).as("no write came before").isTrue();
  }

  /**
   * A clock that runs 1 % slow loses a second every 100 s: the lag is measured against the writes of
   * the last lifetimes only, so it is never refused; against its fastest reading ever, it would be
   * after 100 s.
   */
  @Test
  void aClockThatDriftsSlowlyIsNeverRefusedForTheDriftOfLongAgo() {
    ClockLag lag = new ClockLag(GRACE);
    for (long n = 0; n < 300_000 * MS; n += 3 * MS) {
      assertThat(lag.admits(WINDOW, T0 + n - n / 100, n, true)).as("at %d us", n).isTrue();
    }
  }

  /**
   * A step back past the clock tolerance finds the states written ahead corrupt while they are
   * stored, and a reset clears them: the lag rule does not hold such a step up for the size of the
   * step, and writes at it never mix with the far ones.
   */
  @Test
  void aStepBackBeyondTheClockToleranceIsLeftToTheCorruptStateRule() {
    ClockLag lag = new ClockLag(GRACE);
    long ahead = Checks.CLOCK_TOLERANCE_MICROS + 86_400_000 * MS;
    assertThat(lag.admits(WINDOW, T0 + ahead, 0, true)).isTrue();
    for (long n = MS; n < 1_000 * MS; n += 10 * MS) {
      assertThat(lag.admits(WINDOW, T0 + n, n, true)).as("%d us after the step back", n).isTrue();
    }
    assertThat(lag.eras()).isBetween(2, 3);
    // Within the tolerance the same step back is refused.
    ClockLag near = new ClockLag(GRACE);
    assertThat(near.admits(WINDOW, T0 + Checks.CLOCK_TOLERANCE_MICROS - 60_000 * MS, 0, true)).isTrue();
    assertThat(near.admits(WINDOW, T0 + MS, MS, true)).isFalse();
  }

  @Test
  void atMostMaxErasAreKept() {
    ClockLag lag = new ClockLag(GRACE);
    long step = Checks.CLOCK_TOLERANCE_MICROS + 1_000 * MS;
    for (int i = 0; i < 3 * ClockLag.MAX_ERAS; i++) {
      assertThat(lag.admits(WINDOW, T0 + 100 * step - i * step, i, true)).as("step back %d", i).isTrue();
      assertThat(lag.eras()).isLessThanOrEqualTo(ClockLag.MAX_ERAS);
    }
  }

  @Test
  void theLongestLifetimeWrittenCountsAcrossPolicies() {
    ClockLag lag = new ClockLag(GRACE);
    Algorithm hourly = new Algorithm.FixedWindow(1, 3_600_000 * MS);
    assertThat(lag.admits(hourly, T0, 0, true)).isTrue();
    assertThat(lag.admits(WINDOW, T0 + 200 * MS, 200 * MS, true)).isTrue();
    // Ten minutes of wall time, one second on the clock: the hourly state written at T0 still counts.
    assertThat(lag.admits(WINDOW, T0 + 1_000 * MS, 600_000 * MS, true)).isFalse();
  }
}
