package dev.sluice.server;

import dev.sluice.Decision;
import dev.sluice.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Ticker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;

/**
 * Replays one {@link Traffic} trace through one limiter per algorithm, all with the same numbers
 * (limit L per window W: fixed window, sliding window and sliding log of L per W; a token bucket of
 * capacity L refilled L per W; GCRA of rate L per W with burst L), each on the memory tier with its
 * own {@link ManualTicker}, so a run of minutes of traffic takes milliseconds and gives the same
 * answer every time.
 */
final class Simulation {
  /**
   * The start of simulated time: a multiple of every window up to a day, so that the windows the
   * sliding window aligns to the epoch start where the fixed window's first window starts.
   */
  static final long START_MICROS = 20_454L * 86_400_000_000L;

  /** What one algorithm did with the trace. */
  record Result(Policy policy, long admitted, long refused, long refusedKeyTableFull, long[] admittedPerBin,
                long[] refusedPerBin, long[] admittedTimes) {

    /** The most requests admitted within any span of {@code spanMicros}. */
    long mostAdmittedWithin(long spanMicros) {
      long best = 0;
      int lo = 0;
      for (int hi = 0; hi < admittedTimes.length; hi++) {
        while (admittedTimes[hi] - admittedTimes[lo] >= spanMicros) {
          lo++;
        }
        best = Math.max(best, hi - lo + 1);
      }
      return best;
    }
  }

  private Simulation() {}

  /** The five policies with the same numbers. */
  static List<Policy> policies(long limit, Duration window) {
    return List.of(
        Policy.fixedWindow("fixed-window", limit, window),
        Policy.slidingWindow("sliding-window", limit, window),
        Policy.slidingLog("sliding-log", limit, window),
        Policy.tokenBucket("token-bucket", limit, limit, window),
        Policy.gcra("gcra", limit, window, limit));
  }

  /**
   * Replays {@code traffic} through a limiter per policy made by {@code limiters} (policy, ticker).
   * {@code progress} is told after every request.
   */
  static List<Result> run(Traffic traffic, List<Policy> policies, long binMicros,
                          BiFunction<Policy, Ticker, RateLimiter> limiters, ProgressBar progress) {
    int bins = (int) Math.max(1, -Math.floorDiv(-traffic.durationMicros, binMicros));
    List<Result> results = new ArrayList<>();
    for (Policy p : policies) {
      ManualTicker ticker = Ticker.manual(START_MICROS);
      RateLimiter limiter = limiters.apply(p, ticker);
      long[] admittedPerBin = new long[bins];
      long[] refusedPerBin = new long[bins];
      long[] admittedTimes = new long[traffic.size()];
      long admitted = 0;
      long refused = 0;
      long full = 0;
      try {
        for (int i = 0; i < traffic.size(); i++) {
          long t = traffic.times[i];
          ticker.set(START_MICROS + t);
          Decision d = limiter.tryAcquire(traffic.keyNames[traffic.keys[i]], 1, p);
          int bin = (int) Math.min(bins - 1, t / binMicros);
          if (d.allowed()) {
            admittedPerBin[bin]++;
            admittedTimes[(int) admitted++] = t;
          } else {
            refusedPerBin[bin]++;
            refused++;
            if (d.reason() == Reason.KEY_TABLE_FULL) {
              full++;
            }
          }
          progress.step();
        }
      } finally {
        if (limiter instanceof AutoCloseable c) {
          try {
            c.close();
          } catch (Exception ignored) {
            // a memory limiter holds nothing worth reporting
          }
        }
      }
      results.add(new Result(p, admitted, refused, full, admittedPerBin, refusedPerBin,
          java.util.Arrays.copyOf(admittedTimes, (int) admitted)));
    }
    progress.done();
    return results;
  }
}
