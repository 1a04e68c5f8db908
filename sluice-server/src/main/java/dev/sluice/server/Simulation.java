package dev.sluice.server;

import dev.sluice.Decision;
import dev.sluice.testing.ManualTicker;
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

  /**
   * What one algorithm did with the trace. Per bin, the cost of the requests admitted and refused
   * (one per request, or the actual tokens under the LLM pattern); {@code used} the cost of the
   * admitted requests in all, {@code charged} what the limiter counted for them.
   */
  record Result(Policy policy, long admitted, long refused, long refusedKeyTableFull, long[] admittedPerBin,
                long[] refusedPerBin, long[] admittedTimes, long used, long charged) {

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

  /** The cost policies ({@code --pattern llm}) that settle each admitted call at its actual cost. */
  static final java.util.Set<String> SETTLING = java.util.Set.of("settled");

  /**
   * The LLM pattern's two limiters, one sliding window of {@code limit} tokens per window each:
   * {@code estimate-only} keeps every reservation charged, {@code settled} settles it at the actual.
   */
  static List<Policy> costPolicies(long limit, Duration window) {
    return List.of(Policy.slidingWindow("estimate-only", limit, window), Policy.slidingWindow("settled", limit, window));
  }

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
    return run(traffic, policies, binMicros, limiters, progress, java.util.Set.of());
  }

  /**
   * {@link #run} where the policies named in {@code settling} settle each admitted request at its
   * actual cost ({@link RateLimiter#settle}); the others leave the reservation charged.
   */
  static List<Result> run(Traffic traffic, List<Policy> policies, long binMicros,
                          BiFunction<Policy, Ticker, RateLimiter> limiters, ProgressBar progress, java.util.Set<String> settling) {
    int bins = (int) Math.max(1, -Math.floorDiv(-traffic.durationMicros, binMicros));
    List<Result> results = new ArrayList<>();
    for (Policy p : policies) {
      ManualTicker ticker = ManualTicker.at(START_MICROS);
      RateLimiter limiter = limiters.apply(p, ticker);
      long[] admittedPerBin = new long[bins];
      long[] refusedPerBin = new long[bins];
      long[] admittedTimes = new long[traffic.size()];
      long admitted = 0;
      long refused = 0;
      long full = 0;
      long used = 0;
      long charged = 0;
      boolean settles = settling.contains(p.name());
      try {
        for (int i = 0; i < traffic.size(); i++) {
          long t = traffic.times[i];
          ticker.set(START_MICROS + t);
          Decision d = limiter.tryAcquire(traffic.keyNames[traffic.keys[i]], traffic.estimate, p);
          int bin = (int) Math.min(bins - 1, t / binMicros);
          long cost = traffic.cost(i);
          if (d.allowed()) {
            admittedPerBin[bin] += cost;
            admittedTimes[(int) admitted++] = t;
            used += cost;
            charged += settles && limiter.settle(d.ticket().orElseThrow(), cost) != dev.sluice.Settlement.FAILED ? cost : traffic.estimate;
          } else {
            refusedPerBin[bin] += cost;
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
          java.util.Arrays.copyOf(admittedTimes, (int) admitted), used, charged));
    }
    progress.done();
    return results;
  }
}
