package dev.sluice;

import dev.sluice.internal.AlgorithmKind;
import dev.sluice.internal.Checks;

/**
 * The five algorithms, as validated parameter records. Their behaviour lives once, in the reference
 * model ({@link dev.sluice.model.ReferenceModel}); every backend computes exactly that model.
 *
 * <p>All durations are whole microseconds, 1 ms..2^48 us. Every parameter, product and sum an
 * algorithm computes is kept at or under 2^52 ({@link Checks#MAX_EXACT}), and every instant it
 * computes ahead of the clock within 2^49 us ({@link Checks#MAX_AHEAD}), because the Redis backend
 * evaluates the same arithmetic in Lua doubles, which are exact only up to 2^53, and SQL in bigint.
 * A record refuses numbers outside these bounds with a message that names the product and the fix.
 */
public sealed interface Algorithm
    permits Algorithm.FixedWindow, Algorithm.SlidingWindow, Algorithm.TokenBucket, Algorithm.Gcra, Algorithm.SlidingLog {

  /** The most permits this algorithm can grant at once: the value a decision reports as its limit. */
  long limit();

  /**
   * A short stable name: {@code fixed-window}, {@code sliding-window}, {@code token-bucket}, {@code gcra},
   * {@code sliding-log}; the {@code algorithm} of a configuration entry and the tag of stored state.
   */
  default String id() {
    return AlgorithmKind.of(this).id();
  }

  /**
   * The span of time this algorithm's quota covers, in microseconds: the window, or for a bucket
   * (token bucket, GCRA) the time its rate takes to refill its burst from empty, rounded up. It is
   * the {@code w} of the {@code RateLimit-Policy} header and the base of a ticket's life.
   */
  default long quotaMicros() {
    return AlgorithmKind.quotaMicros(this);
  }

  /**
   * Fixed window: a window opens on a key's first hit and lasts {@code windowMicros}; the next hit
   * after it ends opens a new one. A burst across a boundary can admit up to twice the limit.
   */
  record FixedWindow(long limit, long windowMicros) implements Algorithm {
    public FixedWindow {
      Checks.positive("limit", limit);
      Checks.exact("fixed window", "limit", limit, "use a smaller limit, or a shorter window with a proportional limit");
      checkWindow(windowMicros);
    }
  }

  /**
   * Sliding window, the two-window weighted counter: windows aligned to multiples of
   * {@code windowMicros}; the previous window's count is weighted by the part of it still inside the
   * sliding window. Requires {@code limit * windowMicros <= 2^52}.
   */
  record SlidingWindow(long limit, long windowMicros) implements Algorithm {
    public SlidingWindow {
      Checks.positive("limit", limit);
      checkWindow(windowMicros);
      Checks.exactProduct("sliding window", limit, "limit", windowMicros, "window");
    }
  }

  /**
   * Token bucket: holds at most {@code capacity} tokens, refills {@code refillTokens} every
   * {@code refillPeriodMicros}, continuously (a fraction of a token accrues as time passes). A new key
   * starts full. Requires {@code capacity * refillPeriodMicros <= 2^52}, {@code refillTokens <= 2^52}
   * and {@code capacity * refillPeriodMicros / refillTokens < 2^49} us (the time to refill an empty bucket).
   */
  record TokenBucket(long capacity, long refillTokens, long refillPeriodMicros) implements Algorithm {
    public TokenBucket {
      Checks.positive("capacity", capacity);
      Checks.positive("refill tokens", refillTokens);
      Checks.exact("token bucket", "refill tokens", refillTokens,
          "refill fewer tokens per period (a refill of capacity x period tokens already fills an empty bucket in 1 us)");
      checkWindow(refillPeriodMicros);
      Checks.exactProduct("token bucket", capacity, "capacity", refillPeriodMicros, "refill period");
      if (capacity * refillPeriodMicros / refillTokens >= Checks.MAX_AHEAD) {
        throw new IllegalArgumentException("token bucket: capacity " + capacity + " times refill period " + refillPeriodMicros
            + " over refill tokens " + refillTokens + " is " + capacity * refillPeriodMicros / refillTokens
            + " us, the time an empty bucket takes to refill, over 2^49 us (about 17.8 years); "
            + "use a smaller capacity, a shorter period or more refill tokens");
      }
    }

    @Override public long limit() { return capacity; }
  }

  /**
   * GCRA (generic cell rate algorithm): {@code rate} requests per {@code periodMicros}, with up to
   * {@code burst} admitted at once. It stores a single theoretical arrival time (kept exactly, with
   * its fraction of a microsecond in units of 1/rate). Its decisions equal those of a token bucket
   * of capacity {@code burst} refilling {@code rate} per period: it is the same limit in the
   * one-timestamp form that is cheapest to store. Requires {@code burst * periodMicros + rate <= 2^52}
   * (the largest debt it adds a request to) and {@code burst * periodMicros / rate <= 2^49} us (how far
   * ahead of the clock a full burst puts the arrival time).
   */
  record Gcra(long rate, long periodMicros, long burst) implements Algorithm {
    public Gcra {
      Checks.positive("rate", rate);
      checkWindow(periodMicros);
      Checks.positive("burst", burst);
      Checks.exactProduct("gcra", burst, "burst", periodMicros, "period");
      long cap = burst * periodMicros;
      if (rate > Checks.MAX_EXACT - cap) {
        throw new IllegalArgumentException("gcra: burst " + burst + " times period " + periodMicros + " (microseconds) plus rate "
            + rate + " exceeds 2^52, the exact-integer range every backend computes a debt in; use a smaller rate "
            + "with a proportionally shorter period");
      }
      if (cap / rate >= Checks.MAX_AHEAD) {
        throw new IllegalArgumentException("gcra: burst " + burst + " times period " + periodMicros + " over rate " + rate
            + " is " + cap / rate + " us, how far a full burst puts the arrival time ahead of the clock, over 2^49 us "
            + "(about 17.8 years); use a smaller burst, a shorter period or a higher rate");
      }
    }

    @Override public long limit() { return burst; }
  }

  /**
   * Exact sliding log: every admitted request's time is kept for one window; a request is admitted
   * when the permits logged in the last {@code windowMicros} plus its own are within the limit.
   * Memory per key grows with the limit, so it is a memory-tier algorithm.
   */
  record SlidingLog(long limit, long windowMicros) implements Algorithm {
    public SlidingLog {
      Checks.positive("limit", limit);
      Checks.exact("sliding log", "limit", limit, "use a smaller limit, or a shorter window with a proportional limit");
      checkWindow(windowMicros);
    }
  }

  private static void checkWindow(long micros) {
    Checks.windowMicros("window", micros);
  }
}
