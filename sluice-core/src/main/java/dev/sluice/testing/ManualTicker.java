package dev.sluice.testing;

import dev.sluice.Ticker;
import dev.sluice.internal.Checks;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@link Ticker} for tests: time moves only when {@link #advance} or {@link #set} is called. Thread-safe.
 *
 * <pre>{@code
 * ManualTicker clock = ManualTicker.at(1_700_000_000_000_000L);
 * RateLimiter limiter = RateLimiters.memory(policy).ticker(clock).build();
 * clock.advance(Duration.ofSeconds(1));
 * }</pre>
 *
 * <p>It starts at a reading limiters accept; {@link #set} and {@link #advance} may then move it
 * anywhere, which is how {@code INVALID_CLOCK} is tested.
 */
public final class ManualTicker implements Ticker {
  private final AtomicLong now;

  private ManualTicker(long startMicros) {
    this.now = new AtomicLong(Checks.tickerStart(startMicros));
  }

  /**
   * A ticker that reads {@code startMicros} (epoch microseconds) until moved; a start outside
   * 1..2^52 - 2^49, which every decision would refuse as {@code INVALID_CLOCK}, is refused with an
   * {@link IllegalArgumentException} saying why.
   */
  public static ManualTicker at(long startMicros) {
    return new ManualTicker(startMicros);
  }

  @Override public long nowMicros() {
    return now.get();
  }

  /** Moves the reading forward by {@code d} (backward when negative), to the microsecond. */
  public ManualTicker advance(Duration d) {
    return advanceMicros(d.toNanos() / 1_000);
  }

  /** Moves the reading by {@code micros}. */
  public ManualTicker advanceMicros(long micros) {
    now.addAndGet(micros);
    return this;
  }

  /** Sets the reading to {@code micros}, valid or not. */
  public ManualTicker set(long micros) {
    now.set(micros);
    return this;
  }
}
