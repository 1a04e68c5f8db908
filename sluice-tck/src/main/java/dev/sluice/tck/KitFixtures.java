package dev.sluice.tck;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sluice.Algorithm;
import dev.sluice.FailureMode;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.internal.AlgorithmKind;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;

/**
 * The fixtures of the conformance kit: the hooks a backend supplies (its limiter, what it supports,
 * its outage fixture), the policies and clocks the cases run on, and the limiters they build,
 * released after each case. A backend never extends this directly: its test class extends
 * {@link RateLimiterContract}, which runs every case. The cases stand one concern a file, in a
 * sealed chain: {@link HotKeyCases}, {@link SettlementCases}, {@link OutageCases},
 * {@link BoundCases}, {@link PipelineCases}, then {@code RateLimiterContract} (trace replay, tickets, decisions, budgets).
 */
public abstract sealed class KitFixtures permits HotKeyCases {
  /** Start of the kit's clock: an epoch-microsecond instant in 2024 plus a random offset. */
  private static final long EPOCH_2024 = 1_704_067_200_000_000L;

  private final List<RateLimiter> created = new ArrayList<>();

  KitFixtures() {}

  /**
   * A fresh limiter whose default policy is {@code policy} and whose time comes from {@code ticker}.
   * Shared stores must read this ticker rather than the server's clock.
   */
  protected abstract RateLimiter newLimiter(Policy policy, Ticker ticker);

  /**
   * A limiter like {@link #newLimiter} that issues and accepts tickets with {@code issuer} (its
   * builder's {@code issuer(...)}), over a budget of its own: the case of issue 26, finding 5 builds
   * two with one issuer. A backend whose limiters take no issuer answers empty and skips the case.
   */
  protected Optional<RateLimiter> newLimiterWithIssuer(Policy policy, Ticker ticker, dev.sluice.Ticket.Issuer issuer) {
    return Optional.empty();
  }

  /**
   * A limiter like {@link #newLimiter} that reports to {@code listener} with keys (its builder's
   * {@code listener(listener, true)}), for {@link PipelineCases}. A backend that answers empty skips
   * that case; every Sluice backend supplies it.
   */
  protected Optional<RateLimiter> newLimiterWithListener(Policy policy, Ticker ticker, dev.sluice.RateLimitListener listener) {
    return Optional.empty();
  }

  /**
   * A limiter for the lagging-clock case ({@link BoundCases}), on {@code ticker} like
   * {@link #newLimiter}: on a store that expires state on a clock of its own (Redis's TTL runs on the
   * server's), one whose stored state outlives its last moment by little, so that the case waits
   * little for the store to drop it. The default is {@link #newLimiter}.
   */
  protected RateLimiter newLimiterWithShortExpiry(Policy policy, Ticker ticker) {
    return newLimiter(policy, ticker);
  }

  /**
   * How long, in real time, a state written by {@link #newLimiterWithShortExpiry} may stay stored
   * after it stops mattering, when its clock runs at the speed of real time (Redis: the expiry grace
   * plus the timeout); zero, the default, for a store that never expires state on a clock of its own.
   */
  protected Duration shortExpiryOutlives() {
    return Duration.ZERO;
  }

  /** Whether this backend implements {@code algorithm}; the others' tests are skipped. */
  protected boolean supports(Algorithm algorithm) {
    return true;
  }

  /**
   * Whether this backend settles tickets at their actual cost ({@code RateLimiter.settle}); the
   * settlement cases are skipped otherwise. Every Sluice backend does; a new one answers false until
   * its store step can.
   */
  protected boolean settles() {
    return true;
  }

  /** The backend's key-length cap, if it has one (the memory tier does; hashed stores do not). */
  protected OptionalInt maxKeyLength() {
    return OptionalInt.empty();
  }

  /**
   * A limiter failing over to {@code mode} on a store this test can take down and bring back, or
   * empty when the backend has no such fixture (the outage cases are then skipped).
   */
  protected Optional<Outage> outage(Policy policy, Ticker ticker, FailureMode mode) throws Exception {
    return Optional.empty();
  }

  /** A limiter over a store that a test can stop and restart. */
  public interface Outage extends AutoCloseable {
    RateLimiter limiter();

    /** The store stops answering; returns once decisions fail. */
    void down() throws Exception;

    /** The store answers again; returns once it does. */
    void up() throws Exception;
  }

  /** Events per replayed trace. */
  protected int traceLength() {
    return 10_000;
  }

  /**
   * Whether asynchronous acquires for one key issued one after another from one thread reach the
   * store in that order (one connection, or coalescing). True by default; a backend whose async
   * calls run in parallel on a pool (PostgreSQL) says false, and the burst case is skipped.
   */
  protected boolean decidesAsyncCallsInIssueOrder() {
    return true;
  }

  /** Releases a limiter after a test; closes it when it is {@link AutoCloseable}. */
  protected void release(RateLimiter limiter) throws Exception {
    if (limiter instanceof AutoCloseable c) {
      c.close();
    }
  }

  @AfterEach
  final void releaseAll() throws Exception {
    for (RateLimiter l : created) {
      release(l);
    }
    created.clear();
  }

  // ------------------------------------------------------------------------------------------
  // Policies: one template per algorithm, small numbers so traces saturate and roll often.
  // ------------------------------------------------------------------------------------------

  /** Algorithm templates the parameterized tests run over. */
  public static Stream<String> algorithms() {
    return Arrays.stream(AlgorithmKind.values()).map(AlgorithmKind::id);
  }

  /** The algorithms that count in windows (a refund or an underrun after the window rolled does nothing). */
  public static Stream<String> windowAlgorithms() {
    return Arrays.stream(AlgorithmKind.values()).filter(k -> !k.hasBurst()).map(AlgorithmKind::id);
  }

  /** A policy of the given algorithm with a fresh random name and the kit's standard numbers. */
  protected static Policy policy(String algorithm, long limit) {
    return policy("tck-" + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffffffL) + "-" + algorithm, algorithm, limit);
  }

  /** A policy named {@code name} of the given algorithm with the kit's standard numbers for {@code limit}. */
  protected static Policy policy(String name, String algorithm, long limit) {
    Duration w = Duration.ofSeconds(1);
    AlgorithmKind kind = AlgorithmKind.parse(algorithm);
    // a window counts limit per second; the buckets hold limit and refill a third (token bucket) or a half (GCRA) of it
    long rate = switch (kind) {
      case TOKEN_BUCKET -> Math.max(1, limit / 3);
      case GCRA -> Math.max(1, limit / 2);
      default -> limit;
    };
    return new Policy(name, kind.perPeriod(rate, w, limit));
  }

  static long windowMicros(Policy p) {
    return AlgorithmKind.periodMicros(p.algorithm());
  }

  /**
   * A manual clock some way into 2024: at a start fixed per test class, so a build decides the same
   * trace every time; at a random start under {@code -Dsluice.explore} (the start is in every
   * assertion's description, to turn into a fixed case).
   */
  protected final ManualTicker newTicker() {
    long span = 1_000_000_000_000L;
    long offset = Integer.getInteger("sluice.explore", 0) > 0 ? ThreadLocalRandom.current().nextLong(span)
        : Math.floorMod(getClass().getName().hashCode() * 0x9E37_79B9L, span);
    return ManualTicker.at(EPOCH_2024 + offset);
  }

  final RateLimiter limiter(Policy p, Ticker t) {
    assumeTrue(supports(p.algorithm()), "backend does not implement " + p.algorithm().id());
    return released(newLimiter(p, t));
  }

  /** {@code l}, released after the test. */
  final RateLimiter released(RateLimiter l) {
    created.add(l);
    return l;
  }

  static String alg(String algorithm) {
    return algorithm;
  }
}
