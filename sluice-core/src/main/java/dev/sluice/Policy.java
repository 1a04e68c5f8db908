package dev.sluice;

import dev.sluice.internal.Checks;
import java.time.Duration;

/**
 * A named limit: a validated name plus an {@link Algorithm}. The name is part of every key's identity,
 * so the same key under two policies has two independent budgets.
 *
 * <pre>{@code
 * Policy login = Policy.fixedWindow("login", 10, Duration.ofMinutes(5));
 * Policy api   = Policy.tokenBucket("api", 100, 10, Duration.ofSeconds(1));
 * }</pre>
 */
public record Policy(String name, Algorithm algorithm) {
  public Policy {
    Checks.policyName(name);
    Checks.notNull("algorithm", algorithm);
  }

  /** {@code limit} permits per window; a window opens on a key's first hit. */
  public static Policy fixedWindow(String name, long limit, Duration window) {
    return new Policy(name, new Algorithm.FixedWindow(limit, Checks.window("window", window)));
  }

  /** {@code limit} permits per sliding window (two-window weighted counter). */
  public static Policy slidingWindow(String name, long limit, Duration window) {
    return new Policy(name, new Algorithm.SlidingWindow(limit, Checks.window("window", window)));
  }

  /** A bucket of {@code capacity} tokens refilled by {@code refillTokens} every {@code refillPeriod}, continuously. */
  public static Policy tokenBucket(String name, long capacity, long refillTokens, Duration refillPeriod) {
    return new Policy(name, new Algorithm.TokenBucket(capacity, refillTokens, Checks.window("refill period", refillPeriod)));
  }

  /** {@code rate} per {@code period} with up to {@code burst} at once (GCRA). */
  public static Policy gcra(String name, long rate, Duration period, long burst) {
    return new Policy(name, new Algorithm.Gcra(rate, Checks.window("period", period), burst));
  }

  /** Exact sliding log of {@code limit} permits per {@code window} (memory tier). */
  public static Policy slidingLog(String name, long limit, Duration window) {
    return new Policy(name, new Algorithm.SlidingLog(limit, Checks.window("window", window)));
  }

  /** The most permits one call may ask for under this policy. */
  public long limit() {
    return algorithm.limit();
  }

  /** This policy's algorithm with another name, e.g. to give a derived limit its own budget. */
  public Policy withName(String newName) {
    return new Policy(newName, algorithm);
  }
}
