package dev.sluice.store;

import dev.sluice.Algorithm;
import dev.sluice.ClockedRateLimiter;
import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.internal.Checks;
import dev.sluice.internal.StoredId;
import dev.sluice.model.Outcome;
import dev.sluice.model.ReferenceModel;
import dev.sluice.spi.StoreTimeoutException;
import dev.sluice.spi.StoredRecord;
import dev.sluice.spi.VersionedStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
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
 * <h2>Failures</h2>
 * <ul>
 *   <li>Retries exhausted: refused with {@link Reason#CONTENTION}, always closed (allowing a contended
 *       key is exactly what an attacker flooding it would want).
 *   <li>A record that is not what this engine writes: refused with {@link Reason#CORRUPT_STATE}, always
 *       closed; {@link #reset} deletes it; {@link #sweep} keeps and reports it.
 *   <li>A clock reading that is not positive, above 2^52 microseconds (the year 2112), or behind the
 *       record's last write by more than {@code clockTolerance}: refused with
 *       {@link Reason#INVALID_CLOCK}, always closed.
 *   <li>{@link dev.sluice.spi.StoreException} or any other exception from the store:
 *       {@link Reason#STORE_UNAVAILABLE}; {@link StoreTimeoutException} or the deadline passing:
 *       {@link Reason#TIMEOUT}; both decided by the {@link FailureMode}. Nothing is thrown to the caller
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
 */
public final class VersionedStoreRateLimiter implements ClockedRateLimiter {
  private static final System.Logger LOG = System.getLogger(VersionedStoreRateLimiter.class.getName());

  /** Default per-call deadline. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofMillis(500);
  /** Default number of compare-and-set retries after the first attempt. */
  public static final int DEFAULT_MAX_RETRIES = 10;
  /** Default tolerance for a clock reading behind a record's last write. */
  public static final Duration DEFAULT_CLOCK_TOLERANCE = Duration.ofSeconds(1);
  /** Records per {@link VersionedStore#list} page during a sweep. */
  static final int SWEEP_PAGE = 256;
  /** At most this many malformed record ids are named in a {@link SweepResult}. */
  static final int MAX_REPORTED_MALFORMED = 100;

  private static final long BACKOFF_BASE_NANOS = 100_000;
  private static final long BACKOFF_MAX_NANOS = 10_000_000;

  private final Policy policy;
  private final String defaultPartition;
  private final VersionedStore store;
  private final Ticker ticker;
  private final FailureMode failureMode;
  private final FailureMode closedMode;
  private final int maxRetries;
  private final long timeoutNanos;
  private final long toleranceMicros;
  private final RateLimitListener listener;
  private final boolean timed;

  private VersionedStoreRateLimiter(Builder b) {
    this.policy = b.policy;
    this.defaultPartition = StoredId.policy(b.policy.name());
    this.store = b.store;
    this.ticker = b.ticker;
    this.failureMode = b.failureMode;
    this.closedMode = b.failureMode instanceof FailureMode.Closed ? b.failureMode : FailureMode.closed();
    this.maxRetries = b.maxRetries;
    this.timeoutNanos = b.timeout.toNanos();
    this.toleranceMicros = b.clockTolerance.toNanos() / 1_000;
    this.listener = RateLimitListener.guarded(b.listener, b.includeKeys);
    this.timed = this.listener != RateLimitListener.NONE;
  }

  /** A builder for a limiter whose default policy is {@code policy}, over {@code store}. */
  public static Builder builder(Policy policy, VersionedStore store) {
    return new Builder(policy, store);
  }

  @Override public Policy policy() {
    return policy;
  }

  @Override public Ticker ticker() {
    return ticker;
  }

  /** The store this limiter keeps its state in. */
  public VersionedStore store() {
    return store;
  }

  // ---------------------------------------------------------------------------------------------
  // Acquire
  // ---------------------------------------------------------------------------------------------

  @Override public Decision tryAcquire(String key, long permits, Policy policy) {
    check(key, policy);
    Checks.permits(permits, policy.limit(), policy.name());
    return acquire(key, permits, policy, ticker.nowMicros());
  }

  @Override public Decision tryAcquireAt(String key, long permits, Policy policy, long nowMicros) {
    check(key, policy);
    Checks.permits(permits, policy.limit(), policy.name());
    return acquire(key, permits, policy, nowMicros);
  }

  private Decision acquire(String key, long permits, Policy p, long now) {
    Decision d = acquireOnce(key, permits, p, now);
    listener.onDecision(d, key);
    return d;
  }

  private Decision acquireOnce(String key, long permits, Policy p, long now) {
    Algorithm alg = p.algorithm();
    if (!plausible(now)) {
      return failureMode.decide(p, key, permits, Reason.INVALID_CLOCK, null, now);
    }
    String partition = partition(p);
    String id = StoredId.key(p.name(), key);
    long deadline = System.nanoTime() + timeoutNanos;
    long[] st = new long[ReferenceModel.STATE_SIZE];
    long[] meta = new long[1];
    Outcome out = new Outcome();
    for (int attempt = 0; ; attempt++) {
      StoredRecord rec;
      try {
        rec = read(p, partition, id, deadline);
      } catch (Failure f) {
        return failureMode.decide(p, key, permits, f.reason, f.getCause(), now);
      }
      Reason bad = load(alg, rec, id, now, st, meta);
      if (bad != null) {
        return failureMode.decide(p, key, permits, bad, null, now);
      }
      ReferenceModel.acquire(alg, st, now, permits, out);
      if (!out.allowed()) {
        return Decision.refused(p, Reason.LIMIT_EXCEEDED, out.remaining(), out.resetAt(), out.retryAfter());
      }
      long expected = rec == null ? VersionedStore.ABSENT : rec.version();
      String value = StateFormat.encode(alg, st, rec == null ? now : Math.max(now, meta[0]));
      boolean written;
      try {
        written = cas(p, partition, id, expected, value, ReferenceModel.expiresAt(alg, st), deadline);
      } catch (Failure f) {
        return failureMode.decide(p, key, permits, f.reason, f.getCause(), now);
      }
      if (written) {
        return Decision.allowed(p, out.remaining(), out.resetAt(), new Ticket(p, key, permits, out.stamp()));
      }
      if (attempt >= maxRetries || !backoff(attempt, deadline)) {
        return closedMode.decide(p, key, permits, Reason.CONTENTION, null, now);
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Peek
  // ---------------------------------------------------------------------------------------------

  @Override public Decision peek(String key, Policy policy) {
    check(key, policy);
    return peekAt0(key, policy, ticker.nowMicros());
  }

  @Override public Decision peekAt(String key, Policy policy, long nowMicros) {
    check(key, policy);
    return peekAt0(key, policy, nowMicros);
  }

  private Decision peekAt0(String key, Policy p, long now) {
    Algorithm alg = p.algorithm();
    if (!plausible(now)) {
      return failureMode.decide(p, key, 1, Reason.INVALID_CLOCK, null, now);
    }
    long deadline = System.nanoTime() + timeoutNanos;
    String id = StoredId.key(p.name(), key);
    StoredRecord rec;
    try {
      rec = read(p, partition(p), id, deadline);
    } catch (Failure f) {
      if (failureMode instanceof FailureMode.Fallback fb) {
        // A peek must not charge the fallback limiter.
        return fb.local().peek(key, p).withPath(Path.FALLBACK);
      }
      return failureMode.decide(p, key, 1, f.reason, f.getCause(), now);
    }
    long[] st = new long[ReferenceModel.STATE_SIZE];
    Reason bad = load(alg, rec, id, now, st, new long[1]);
    if (bad != null) {
      return failureMode.decide(p, key, 1, bad, null, now);
    }
    Outcome out = new Outcome();
    ReferenceModel.peek(alg, st, now, out);
    return out.allowed()
        ? Decision.allowed(p, out.remaining(), out.resetAt(), null)
        : Decision.refused(p, Reason.LIMIT_EXCEEDED, out.remaining(), out.resetAt(), out.retryAfter());
  }

  // ---------------------------------------------------------------------------------------------
  // Refund
  // ---------------------------------------------------------------------------------------------

  /**
   * Gives a ticket's permits back (one read, and one compare-and-set when anything changes). Never
   * throws: a null ticket, a spent ticket or a window that rolled is {@link Refund#NO_EFFECT}; a store
   * failure, a corrupt record, an invalid clock or exhausted retries is {@link Refund#FAILED} and leaves
   * the ticket unspent so it may be refunded again.
   */
  @Override public Refund refund(Ticket ticket) {
    return refundAt(ticket, ticker.nowMicros());
  }

  @Override public Refund refundAt(Ticket ticket, long nowMicros) {
    if (ticket == null) {
      return Refund.NO_EFFECT;
    }
    Policy p = ticket.policy();
    if (p.algorithm() instanceof Algorithm.SlidingLog || !ticket.spend()) {
      return report(p, Refund.NO_EFFECT);
    }
    Refund r;
    try {
      r = refundOnce(ticket, p, nowMicros);
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "refund under policy '" + p.name() + "' failed", e);
      r = Refund.FAILED;
    }
    if (r == Refund.FAILED) {
      ticket.unspend();
    }
    return report(p, r);
  }

  private Refund refundOnce(Ticket ticket, Policy p, long now) {
    if (!plausible(now)) {
      return Refund.FAILED;
    }
    Algorithm alg = p.algorithm();
    String partition = partition(p);
    String id = StoredId.key(p.name(), ticket.key());
    long deadline = System.nanoTime() + timeoutNanos;
    long[] st = new long[ReferenceModel.STATE_SIZE];
    long[] meta = new long[1];
    Outcome out = new Outcome();
    try {
      for (int attempt = 0; ; attempt++) {
        StoredRecord rec = read(p, partition, id, deadline);
        if (load(alg, rec, id, now, st, meta) != null) {
          return Refund.FAILED;
        }
        ReferenceModel.refund(alg, st, now, ticket.permits(), ticket.stamp(), out);
        if (!out.wrote()) {
          return Refund.NO_EFFECT;
        }
        long expected = rec == null ? VersionedStore.ABSENT : rec.version();
        String value = StateFormat.encode(alg, st, rec == null ? now : Math.max(now, meta[0]));
        if (cas(p, partition, id, expected, value, ReferenceModel.expiresAt(alg, st), deadline)) {
          return Refund.APPLIED;
        }
        if (attempt >= maxRetries || !backoff(attempt, deadline)) {
          return Refund.FAILED;
        }
      }
    } catch (Failure f) {
      return Refund.FAILED;
    }
  }

  private Refund report(Policy p, Refund r) {
    listener.onRefund(p, r);
    return r;
  }

  // ---------------------------------------------------------------------------------------------
  // Reset
  // ---------------------------------------------------------------------------------------------

  /**
   * Deletes {@code key}'s record under {@code policy}, whatever it holds (this is also how a record
   * refused as {@link Reason#CORRUPT_STATE} is cleared). Does not throw for store trouble: a reset that
   * could not be completed is logged and reported to the listener's {@code onStoreCall}.
   */
  @Override public void reset(String key, Policy policy) {
    check(key, policy);
    String partition = partition(policy);
    String id = StoredId.key(policy.name(), key);
    long deadline = System.nanoTime() + timeoutNanos;
    try {
      for (int attempt = 0; ; attempt++) {
        StoredRecord rec = read(policy, partition, id, deadline);
        if (rec == null || delete(policy, partition, id, rec.version(), deadline)) {
          return;
        }
        if (attempt >= maxRetries || !backoff(attempt, deadline)) {
          LOG.log(System.Logger.Level.WARNING, "reset of a key under policy ''{0}'' gave up after {1} conflicting writes",
              policy.name(), attempt + 1);
          return;
        }
      }
    } catch (Failure f) {
      LOG.log(System.Logger.Level.WARNING, "reset of a key under policy '" + policy.name() + "' failed: " + f.reason, f.getCause());
    }
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
    Checks.notNull("policy", policy);
    long now = ticker.nowMicros();
    if (!plausible(now)) {
      throw new IllegalStateException("clock reading " + now + " us is not plausible (it must be in 1..2^52); "
          + "sweep cannot judge expiry with it");
    }
    Algorithm alg = policy.algorithm();
    String partition = partition(policy);
    long[] st = new long[ReferenceModel.STATE_SIZE];
    long[] meta = new long[1];
    long scanned = 0, deleted = 0, live = 0, changed = 0, malformed = 0;
    List<String> malformedIds = new ArrayList<>();
    String after = null;
    while (true) {
      List<StoredRecord> page = storeList(policy, partition, after);
      for (StoredRecord rec : page) {
        scanned++;
        after = rec.id();
        int kind = wellFormedId(rec.id()) && rec.version() > 0
            ? StateFormat.decode(alg, rec.value(), st, meta) : StateFormat.MALFORMED;
        if (kind == StateFormat.MALFORMED) {
          malformed++;
          if (malformedIds.size() < MAX_REPORTED_MALFORMED) {
            malformedIds.add(String.valueOf(rec.id()));
          }
          continue;
        }
        long expiresAt = kind == StateFormat.OK
            ? Math.max(rec.expiresAtMicros(), ReferenceModel.expiresAt(alg, st)) : rec.expiresAtMicros();
        if (expiresAt > now) {
          live++;
        } else if (sweepDelete(policy, partition, rec)) {
          deleted++;
        } else {
          changed++;
        }
      }
      if (page.size() < SWEEP_PAGE || after == null) {
        break;
      }
    }
    if (malformed > 0) {
      LOG.log(System.Logger.Level.WARNING, "sweep of policy ''{0}'' kept {1} malformed record(s), e.g. {2}; "
          + "checks against them fail closed with CORRUPT_STATE until reset", policy.name(), malformed, malformedIds.get(0));
    }
    return new SweepResult(policy.name(), scanned, deleted, live, changed, malformed, List.copyOf(malformedIds));
  }

  private List<StoredRecord> storeList(Policy p, String partition, String after) {
    long t0 = timed ? System.nanoTime() : 0;
    try {
      List<StoredRecord> page = store.list(partition, after, SWEEP_PAGE, System.nanoTime() + timeoutNanos);
      if (timed) {
        listener.onStoreCall(p, System.nanoTime() - t0, null);
      }
      return Objects.requireNonNull(page, "store returned a null page");
    } catch (RuntimeException e) {
      if (timed) {
        listener.onStoreCall(p, System.nanoTime() - t0, e);
      }
      throw e instanceof dev.sluice.spi.StoreException se ? se
          : new dev.sluice.spi.StoreException("sweep of policy '" + p.name() + "' could not list its records", e);
    }
  }

  private boolean sweepDelete(Policy p, String partition, StoredRecord rec) {
    try {
      return delete(p, partition, rec.id(), rec.version(), System.nanoTime() + timeoutNanos);
    } catch (Failure f) {
      Throwable c = f.getCause();
      throw c instanceof dev.sluice.spi.StoreException se ? se
          : new dev.sluice.spi.StoreException("sweep of policy '" + p.name() + "' could not delete an expired record", c);
    }
  }

  private static boolean wellFormedId(String id) {
    if (id == null || id.length() != 64) {
      return false;
    }
    for (int i = 0; i < 64; i++) {
      char c = id.charAt(i);
      if ((c < '0' || c > '9') && (c < 'a' || c > 'f')) {
        return false;
      }
    }
    return true;
  }

  // ---------------------------------------------------------------------------------------------
  // Shared steps
  // ---------------------------------------------------------------------------------------------

  private static void check(String key, Policy policy) {
    Checks.key(key);
    Checks.notNull("policy", policy);
    if (policy.algorithm() instanceof Algorithm.SlidingLog) {
      throw slidingLog(policy);
    }
  }

  static IllegalArgumentException slidingLog(Policy policy) {
    return new IllegalArgumentException("policy '" + policy.name() + "' uses the sliding log, which keeps a list of "
        + "entries per key and is a memory-tier algorithm; a versioned store supports fixed window, sliding window, "
        + "token bucket and GCRA");
  }

  /** Epoch microseconds in 1..2^52 (the year 2112): anything else is not a clock reading to trust. */
  private static boolean plausible(long now) {
    return now > 0 && now <= Checks.MAX_EXACT;
  }

  /**
   * Loads {@code rec} into {@code st} (all zeros when absent or written under another algorithm) and
   * returns null, or the reason it cannot be used.
   */
  private Reason load(Algorithm alg, StoredRecord rec, String id, long now, long[] st, long[] meta) {
    st[0] = 0;
    st[1] = 0;
    st[2] = 0;
    if (rec == null) {
      return null;
    }
    if (rec.version() <= 0 || !id.equals(rec.id())) {
      return Reason.CORRUPT_STATE;
    }
    int kind = StateFormat.decode(alg, rec.value(), st, meta);
    if (kind == StateFormat.MALFORMED) {
      return Reason.CORRUPT_STATE;
    }
    if (kind == StateFormat.FOREIGN) {
      st[0] = 0;
      st[1] = 0;
      st[2] = 0;
    }
    if (now < meta[0] - toleranceMicros) {
      return Reason.INVALID_CLOCK;
    }
    return null;
  }

  private String partition(Policy p) {
    return p.name().equals(policy.name()) ? defaultPartition : StoredId.policy(p.name());
  }

  private StoredRecord read(Policy p, String partition, String id, long deadline) throws Failure {
    if (System.nanoTime() - deadline >= 0) {
      throw new Failure(Reason.TIMEOUT, null);
    }
    long t0 = timed ? System.nanoTime() : 0;
    try {
      StoredRecord r = store.read(partition, id, deadline);
      if (timed) {
        listener.onStoreCall(p, System.nanoTime() - t0, null);
      }
      return r;
    } catch (RuntimeException e) {
      throw failure(p, t0, e);
    }
  }

  private boolean cas(Policy p, String partition, String id, long expected, String value, long expiresAt, long deadline)
      throws Failure {
    if (System.nanoTime() - deadline >= 0) {
      throw new Failure(Reason.TIMEOUT, null);
    }
    long t0 = timed ? System.nanoTime() : 0;
    try {
      boolean ok = store.compareAndSet(partition, id, expected, value, nextVersion(expected), expiresAt, deadline);
      if (timed) {
        listener.onStoreCall(p, System.nanoTime() - t0, null);
      }
      return ok;
    } catch (RuntimeException e) {
      throw failure(p, t0, e);
    }
  }

  private boolean delete(Policy p, String partition, String id, long version, long deadline) throws Failure {
    if (System.nanoTime() - deadline >= 0) {
      throw new Failure(Reason.TIMEOUT, null);
    }
    long t0 = timed ? System.nanoTime() : 0;
    try {
      boolean ok = store.deleteIfVersion(partition, id, version, deadline);
      if (timed) {
        listener.onStoreCall(p, System.nanoTime() - t0, null);
      }
      return ok;
    } catch (RuntimeException e) {
      throw failure(p, t0, e);
    }
  }

  private Failure failure(Policy p, long t0, RuntimeException e) {
    if (timed) {
      listener.onStoreCall(p, System.nanoTime() - t0, e);
    }
    return new Failure(e instanceof StoreTimeoutException ? Reason.TIMEOUT : Reason.STORE_UNAVAILABLE, e);
  }

  /**
   * The version a write stores: one more than the version read, so a record's history reads in order;
   * a record created from absence starts at a random point in [1, 2^48), so that a record deleted
   * (reset, sweep) and created again does not repeat the versions a slow writer may still hold
   * (the ABA problem of compare-and-set).
   */
  private static long nextVersion(long expected) {
    if (expected > 0 && expected < Long.MAX_VALUE - 1) {
      return expected + 1;
    }
    return ThreadLocalRandom.current().nextLong(1, 1L << 48);
  }

  /**
   * Pauses before retry {@code attempt + 1}: a random time in [0, min(10 ms, 100 us * 2^attempt)]
   * (full jitter spreads the writers of a hot key apart instead of letting them collide again in
   * lockstep), cut short at the deadline. False when the deadline leaves no time to retry.
   */
  private static boolean backoff(int attempt, long deadline) {
    long cap = Math.min(BACKOFF_MAX_NANOS, BACKOFF_BASE_NANOS << Math.min(attempt, 20));
    long pause = ThreadLocalRandom.current().nextLong(cap + 1);
    long left = deadline - System.nanoTime();
    if (left <= 0) {
      return false;
    }
    if (pause > 0) {
      LockSupport.parkNanos(Math.min(pause, left));
      if (Thread.currentThread().isInterrupted()) {
        return false;
      }
    }
    return deadline - System.nanoTime() > 0;
  }

  /** A store call that failed, with the reason the failure mode decides under. */
  private static final class Failure extends Exception {
    private static final long serialVersionUID = 1L;
    final transient Reason reason;

    Failure(Reason reason, Throwable cause) {
      super(null, cause, false, false);
      this.reason = reason;
    }
  }

  @Override public String toString() {
    return "VersionedStoreRateLimiter[policy=" + policy.name() + ", store=" + store.getClass().getSimpleName()
        + ", timeout=" + Duration.ofNanos(timeoutNanos) + ", maxRetries=" + maxRetries + "]";
  }

  /** Builds a {@link VersionedStoreRateLimiter}; every setter validates at once. */
  public static final class Builder {
    private final Policy policy;
    private final VersionedStore store;
    private Ticker ticker = Ticker.system();
    private FailureMode failureMode = FailureMode.closed();
    private int maxRetries = DEFAULT_MAX_RETRIES;
    private Duration timeout = DEFAULT_TIMEOUT;
    private Duration clockTolerance = DEFAULT_CLOCK_TOLERANCE;
    private RateLimitListener listener = RateLimitListener.NONE;
    private boolean includeKeys;

    private Builder(Policy policy, VersionedStore store) {
      this.policy = Checks.notNull("policy", policy);
      this.store = Checks.notNull("store", store);
      if (policy.algorithm() instanceof Algorithm.SlidingLog) {
        throw slidingLog(policy);
      }
    }

    /** The clock decisions are computed at (epoch microseconds); default {@link Ticker#system()}. */
    public Builder ticker(Ticker ticker) {
      this.ticker = Checks.notNull("ticker", ticker);
      return this;
    }

    /** What a check decides when the store fails or times out; default {@link FailureMode#closed()}. */
    public Builder failureMode(FailureMode failureMode) {
      this.failureMode = Checks.notNull("failureMode", failureMode);
      return this;
    }

    /** Compare-and-set retries after the first attempt before refusing with CONTENTION, 0..100; default 10. */
    public Builder maxRetries(int maxRetries) {
      if (maxRetries < 0 || maxRetries > 100) {
        throw new IllegalArgumentException("maxRetries " + maxRetries + " is outside 0..100; "
            + "retries are bounded so that a contended key is refused instead of stalling its callers");
      }
      this.maxRetries = maxRetries;
      return this;
    }

    /** The deadline of one call (all its store calls and retries together), 1 ms..1 min; default 500 ms. */
    public Builder timeout(Duration timeout) {
      Checks.notNull("timeout", timeout);
      if (timeout.compareTo(Duration.ofMillis(1)) < 0 || timeout.compareTo(Duration.ofMinutes(1)) > 0) {
        throw new IllegalArgumentException("timeout " + timeout + " is outside 1 ms..1 min; "
            + "every decision needs a deadline a caller can wait for");
      }
      this.timeout = timeout;
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

    /** Told about decisions, refusals, refunds and store calls; keys are passed only when {@code includeKeys}. */
    public Builder listener(RateLimitListener listener, boolean includeKeys) {
      this.listener = Checks.notNull("listener", listener);
      this.includeKeys = includeKeys;
      return this;
    }

    public VersionedStoreRateLimiter build() {
      return new VersionedStoreRateLimiter(this);
    }
  }
}
