package dev.sluice.store;

import dev.sluice.Algorithm;
import dev.sluice.ClockedRateLimiter;
import dev.sluice.Decision;
import dev.sluice.KeyOverrides;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.internal.Checks;
import dev.sluice.internal.Pipelines;
import dev.sluice.model.ReferenceModel;
import dev.sluice.spi.Backend;
import dev.sluice.spi.ForwardingStoreRateLimiter;
import dev.sluice.spi.StoreRateLimiter;
import dev.sluice.spi.StoreTimeoutException;
import dev.sluice.spi.VersionedStore;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.locks.LockSupport;

/**
 * The durable tier over any {@link VersionedStore}: runs the reference model
 * ({@link ReferenceModel}) client-side and keeps each key's state in the store with an optimistic
 * compare-and-set.
 *
 * <pre>{@code
 * RateLimiter limiter = VersionedStoreRateLimiter.builder(Policy.fixedWindow("login", 10, Duration.ofMinutes(5)), store)
 *     .timeout(Duration.ofMillis(200))
 *     .failureMode(FailureMode.closed())
 *     .build();
 * }</pre>
 *
 * <h2>One decision</h2>
 * Read the key's record (one store call); run the model's step at this limiter's clock reading; if the
 * step refused, answer without writing (a flood against a key at its limit costs reads, not writes);
 * if it allowed, write the new state back with {@link VersionedStore#compareAndSet} on the version
 * read (the second and last store call). When another writer got there first, re-read and retry, at
 * most {@code maxRetries} times, after a randomized, exponentially growing pause (full jitter), and
 * never past the call's deadline.
 *
 * <p>The pipeline around that step (validation, the clock, deadlines, the failure mode, tickets,
 * listener events) is the core's one {@link StoreRateLimiter}, the same as every store-backed limiter's:
 * this class is that limiter around its compare-and-set engine (a {@link Backend}), plus the sweep.
 *
 * <h2>Failures</h2>
 * <ul>
 *   <li>Retries exhausted: refused with {@link Reason#CONTENTION}, always closed (allowing a contended
 *       key is exactly what an attacker flooding it would want).
 *   <li>A record that is not what this engine writes: refused with {@link Reason#CORRUPT_STATE}, always
 *       closed; {@link #reset} deletes it; {@link #sweep} keeps and reports it.
 *   <li>A clock reading that is not positive, above 2^52 - 2^49 microseconds (the year 2094), or behind the
 *       record's last write by more than {@code clockTolerance}: refused with
 *       {@link Reason#INVALID_CLOCK}, always closed.
 *   <li>{@link dev.sluice.spi.StoreException} or any other exception from the store:
 *       {@link Reason#STORE_UNAVAILABLE}; {@link StoreTimeoutException} or the deadline passing:
 *       {@link Reason#TIMEOUT}; both decided by the {@link dev.sluice.FailureMode}. Nothing is thrown to the caller
 *       but {@link IllegalArgumentException} for a bad argument.
 * </ul>
 *
 * <h2>Time</h2>
 * Decisions are computed at this limiter's {@link Ticker} (default {@link Ticker#system()}), so every
 * instance sharing a store must have a synchronized clock; a record remembers the latest clock reading
 * that wrote it, and a reading further behind it than {@code clockTolerance} (default 1 s) is refused
 * instead of being trusted. The deadline of a call ({@code timeout}, default 500 ms) is measured on
 * {@link System#nanoTime()}, handed to every store call, and checked before each one.
 *
 * <h2>Stored format</h2>
 * A record's partition is {@code StoredId.policy(policy name)}, its id {@code StoredId.key(policy name,
 * key)} (SHA-256, so the raw key is never written; pseudonymous, not anonymous), its value the model
 * state in the text format {@code s1|<algorithm>|<state0>|<state1>|<state2>|<writtenAt>} (see
 * {@code docs/stores.md}), its expiry {@link ReferenceModel#expiresAt}. Changing a policy's algorithm
 * under the same name makes its existing records count as absent (each key starts afresh).
 *
 * <p>The sliding log keeps a list per key and is a memory-tier algorithm: it is refused here.
 * Thread-safe; holds no lock.
 *
 * <p>This file is over 500 lines because it is a public face plus its public nested {@code Builder}
 * (API, so it stays nested); the step itself is the compare-and-set loop, one method.
 */
public final class VersionedStoreRateLimiter extends ForwardingStoreRateLimiter implements ClockedRateLimiter, KeyOverrides {

  /** Default per-call deadline. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofMillis(500);
  /** The default and largest {@code maxBatch}: {@link StoreRateLimiter#MAX_BATCH}. */
  public static final int MAX_BATCH = StoreRateLimiter.MAX_BATCH;
  /** Default number of compare-and-set retries after the first attempt. */
  public static final int DEFAULT_MAX_RETRIES = 10;
  /** Default tolerance for a clock reading behind a record's last write. */
  public static final Duration DEFAULT_CLOCK_TOLERANCE = Duration.ofSeconds(1);
  /** Records per {@link VersionedStore#list} page during a sweep. */
  static final int SWEEP_PAGE = 256;


  private final Policy policy;
  private final VersionedStore store;
  private final Ticker ticker;
  private final VersionedStoreEngine engine;

  private VersionedStoreRateLimiter(Builder b, VersionedStoreEngine engine) {
    super(b.pipelineOf(engine));
    this.policy = b.policy();
    this.store = b.store;
    this.ticker = b.suppliedClock();
    this.engine = engine;
  }

  /** A builder for a limiter whose default policy is {@code policy}, over {@code store}. */
  public static Builder builder(Policy policy, VersionedStore store) {
    return new Builder(policy, store);
  }

  @Override public Ticker ticker() {
    return ticker;
  }

  /** The store this limiter keeps its state in. */
  public VersionedStore store() {
    return store;
  }

  // The decisions: the core's pipeline, at the caller's instant when it supplies one.

  @Override public Decision tryAcquireAt(String key, long permits, Policy policy, long nowMicros) {
    return Pipelines.of(limiter()).acquireAt(limiter(), key, permits, policy, nowMicros);
  }

  @Override public Decision peekAt(String key, Policy policy, long nowMicros) {
    return Pipelines.of(limiter()).peekAt(limiter(), key, policy, nowMicros);
  }

  @Override public Refund refundAt(Ticket ticket, long nowMicros) {
    return Pipelines.of(limiter()).refundAt(limiter(), ticket, nowMicros);
  }

  @Override public Settlement settleAt(Ticket ticket, long actualPermits, long nowMicros) {
    return Pipelines.of(limiter()).settleAt(limiter(), ticket, actualPermits, nowMicros);
  }

  // ---------------------------------------------------------------------------------------------
  // Per-key overrides
  // ---------------------------------------------------------------------------------------------

  /**
   * {@inheritDoc}
   *
   * <p>Kept in the key's record, beside its state (one read per decision still): a record with an
   * override never expires and no sweep deletes it, and it keeps {@code StateFormat.MAX_SPENT - 1}
   * applied tickets instead of {@code StateFormat.MAX_SPENT} (its value is longer).
   *
   * @throws dev.sluice.spi.StoreException when the store fails or keeps losing the compare-and-set
   */
  @Override public void override(String key, Policy policy) {
    Checks.key(key);
    engine.setOverride(VersionedStoreEngine.CAPABILITIES.require(Checks.notNull("policy", policy)), key, policy.algorithm());
  }

  @Override public boolean clearOverride(String key, Policy policy) {
    Checks.key(key);
    return engine.setOverride(Checks.notNull("policy", policy), key, null);
  }

  @Override public Optional<Policy> overrideOf(String key, Policy policy) {
    Checks.key(key);
    Algorithm a = engine.override(Checks.notNull("policy", policy), key);
    return a == null ? Optional.empty() : Optional.of(a.equals(policy.algorithm()) ? policy : new Policy(policy.name(), a));
  }

  // ---------------------------------------------------------------------------------------------
  // Sweep
  // ---------------------------------------------------------------------------------------------

  /** {@link #sweep(Policy)} of this limiter's default policy. */
  public SweepResult sweep() {
    return sweep(policy);
  }

  /**
   * Deletes the expired records of {@code policy}'s partition: lists it a page at a time and deletes a
   * record only when it is well formed, its state can no longer affect a decision at this limiter's
   * clock reading, and its version is still the one listed (a record written meanwhile is kept).
   * Malformed records are kept (checks against them keep failing closed until {@link #reset}) and
   * reported. Run it from a scheduler; records of a policy that is no longer used need a sweep with
   * that policy.
   *
   * @throws IllegalStateException when the clock reading is not plausible
   * @throws dev.sluice.spi.StoreException when a store call fails or times out (each call has its own
   *     deadline of {@code timeout}); the records handled before it stay handled
   */
  public SweepResult sweep(Policy policy) {
    return engine.sweep(policy);
  }

  /**
   * Where the engine reads the time its deadlines are measured on and how it waits between retries:
   * {@link System#nanoTime()} and {@link LockSupport#parkNanos} in production, a fake clock that a
   * park advances in tests, so no test has to measure a wall-clock window.
   */
  interface Pause {
    Pause SYSTEM = new Pause() {
      @Override public long nanoTime() {
        return System.nanoTime();
      }

      @Override public boolean park(long nanos) {
        LockSupport.parkNanos(nanos);
        return !Thread.currentThread().isInterrupted();
      }
    };

    long nanoTime();

    /** Waits about {@code nanos}; false when interrupted. */
    boolean park(long nanos);
  }

  /** Builds a {@link VersionedStoreRateLimiter}; every setter validates at once. */
  public static final class Builder extends StoreRateLimiter.Settings<Builder> {
    private final VersionedStore store;
    private int maxRetries = DEFAULT_MAX_RETRIES;
    private Duration clockTolerance = DEFAULT_CLOCK_TOLERANCE;
    private Pause pause = Pause.SYSTEM;

    private Builder(Policy policy, VersionedStore store) {
      super(policy, DEFAULT_TIMEOUT);
      this.store = Checks.notNull("store", store);
      VersionedStoreEngine.CAPABILITIES.require(policy);
      ticker(Ticker.system()); // the engine has no clock of its own: default the system's
    }

    @Override protected Builder self() {
      return this;
    }

    /** Compare-and-set retries after the first attempt before refusing with CONTENTION, 0..100; default 10. */
    public Builder maxRetries(int maxRetries) {
      this.maxRetries = Checks.range("maxRetries", maxRetries, 0, 100,
          "retries are bounded so that a contended key is refused instead of stalling its callers");
      return this;
    }

    /**
     * How far this limiter's clock may be behind the latest clock reading that wrote a record before a
     * check against it is refused with INVALID_CLOCK, 0..1 h; default 1 s. Raise it for instances whose
     * clocks are known to drift further apart.
     */
    public Builder clockTolerance(Duration tolerance) {
      Checks.notNull("clockTolerance", tolerance);
      if (tolerance.isNegative() || tolerance.compareTo(Duration.ofHours(1)) > 0) {
        throw new IllegalArgumentException("clockTolerance " + tolerance + " is outside 0..1 h; "
            + "a clock that far behind is not one to decide with");
      }
      this.clockTolerance = tolerance;
      return this;
    }

    /** Tests: the nano clock deadlines are measured on and the wait between retries. */
    Builder pause(Pause pause) {
      this.pause = Checks.notNull("pause", pause);
      return this;
    }

    StoreRateLimiter pipelineOf(VersionedStoreEngine engine) {
      return pipeline(engine);
    }

    public VersionedStoreRateLimiter build() {
      String description = "VersionedStoreRateLimiter[policy=" + policy.name() + ", store=" + store.getClass().getSimpleName()
          + ", timeout=" + timeout() + ", maxRetries=" + maxRetries + "]";
      return new VersionedStoreRateLimiter(this, new VersionedStoreEngine(policy, store, suppliedTicker(), maxRetries,
          clockTolerance.toNanos() / 1_000, listener(), pause, timeout().toNanos(), description));
    }

    Policy policy() {
      return policy;
    }

    Ticker suppliedClock() {
      return suppliedTicker();
    }
  }
}
