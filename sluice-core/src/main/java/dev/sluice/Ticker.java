package dev.sluice;

/**
 * The time source of a limiter, in microseconds since the Unix epoch. Sluice keeps all time as integer
 * microseconds so that the memory tier, the Redis scripts and the SQL statements compute the same
 * decisions for the same trace.
 *
 * <p>{@link #system()} is monotonic: it is anchored to the wall clock once and then advanced by
 * {@link System#nanoTime()}, so a wall-clock step cannot move a window. Tests use a
 * {@link dev.sluice.testing.ManualTicker}.
 */
@FunctionalInterface
public interface Ticker {
  /** Microseconds since the epoch; never decreasing for the system ticker. */
  long nowMicros();

  /** The monotonic system ticker (one shared instance). */
  static Ticker system() {
    return SystemTicker.INSTANCE;
  }
}

/** Wall clock read once, then {@code System.nanoTime()}: monotonic, costs one nanoTime read. */
final class SystemTicker implements Ticker {
  static final SystemTicker INSTANCE = new SystemTicker();
  private final long originNanos = System.nanoTime();
  private final long originMicros = Math.multiplyExact(System.currentTimeMillis(), 1_000L);

  @Override public long nowMicros() {
    return originMicros + (System.nanoTime() - originNanos) / 1_000;
  }
}
