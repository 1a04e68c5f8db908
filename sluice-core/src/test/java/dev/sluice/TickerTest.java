package dev.sluice;

import dev.sluice.testing.ManualTicker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class TickerTest {
  /**
   * Issue 14.8: {@code ManualTicker.at(0)} built a ticker on which every decision was INVALID_CLOCK.
   * A start no limiter accepts is refused when the ticker is built, saying why.
   */
  @Test
  void manualTickerAtZeroMadeEveryDecisionInvalidClock() {
    assertThatThrownBy(() -> ManualTicker.at(0)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("ticker start 0 us is outside 1..2^52 - 2^49 (microseconds since the epoch, up to the year 2094); "
            + "limiters refuse such a reading as INVALID_CLOCK, so every decision on this "
            + "ticker would be refused; start at a real instant such as 1_700_000_000_000_000");
    assertThatThrownBy(() -> ManualTicker.at(-1)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("ticker start -1 us is outside 1..2^52 - 2^49");
    assertThatThrownBy(() -> ManualTicker.at((1L << 52) - (1L << 49) + 1)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("ticker start 3940649673949185 us is outside 1..2^52 - 2^49");
    assertThat(ManualTicker.at(1).nowMicros()).isEqualTo(1);
    assertThat(ManualTicker.at((1L << 52) - (1L << 49)).nowMicros()).isEqualTo((1L << 52) - (1L << 49));
    // Moving a built ticker out of range stays possible: that is how INVALID_CLOCK is tested.
    assertThat(ManualTicker.at(1).set(0).nowMicros()).isZero();
  }
}
