package dev.sluice;

import dev.sluice.internal.Checks;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@link Ticker} for tests: time moves only when {@link #advance} or {@link #set} is called. Thread-safe.
 *
 * <p>It starts at a reading limiters accept (1..2^52 us, see {@link Ticker#manual}); {@link #set} and
 * {@link #advance} may then move it anywhere, which is how {@code INVALID_CLOCK} is tested.
 */
public final class ManualTicker implements Ticker {
  private final AtomicLong now;

  ManualTicker(long startMicros) {
    this.now = new AtomicLong(Checks.tickerStart(startMicros));
  }

  @Override public long nowMicros() {
    return now.get();
  }

  public ManualTicker advance(Duration d) {
    return advanceMicros(d.toNanos() / 1_000);
  }

  public ManualTicker advanceMicros(long micros) {
    now.addAndGet(micros);
    return this;
  }

  public ManualTicker set(long micros) {
    now.set(micros);
    return this;
  }
}
