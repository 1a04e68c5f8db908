package dev.sluice.store;

import dev.sluice.Algorithm;
import dev.sluice.ClockedRateLimiter;
import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.internal.AlgorithmKind;
import dev.sluice.internal.Checks;
import dev.sluice.internal.ModelSteps;
import dev.sluice.internal.StoredId;
import dev.sluice.model.Outcome;
import dev.sluice.model.ReferenceModel;
import dev.sluice.spi.StepResult;
import dev.sluice.spi.StoreBackedRateLimiter;
import dev.sluice.spi.StoreException;
import dev.sluice.spi.StoreNotReachedException;
import dev.sluice.spi.StoreTimeoutException;
import dev.sluice.spi.StoredRecord;
import dev.sluice.spi.VersionedStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
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
 * <p>The pipeline around that step (validation, the clock, deadlines, the failure mode, tickets,
 * listener events) is {@link StoreBackedRateLimiter}'s, the same as every store-backed limiter's.
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
public final class VersionedStoreRateLimiter extends StoreBackedRateLimiter<Policy> implements ClockedRateLimiter {
  private static final System.Logger LOG = System.getLogger(VersionedStoreRateLimiter.class.getName());

  /** Default per-call deadline. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofMillis(500);
  /** Default number of compare-and-set retries after the first attempt. */
  public static final int DEFAULT_MAX_RETRIES = 10;
  /** Default tolerance for a clock reading behind a record's last write. */
  public static final Duration DEFAULT_CLOCK_TOLERANCE = Duration.ofSeconds(1);
  /** Records per {@link VersionedStore#list} page during a sweep. */
  static final int SWEEP_PAGE = 256;

  private static final long BACKOFF_BASE_NANOS = 100_000;
  private static final long BACKOFF_MAX_NANOS = 10_000_000;

  private final Policy policy;
  private final String defaultPartition;
  private final VersionedStore store;
  private final Ticker ticker;
  private final int maxRetries;
  private final long toleranceMicros;
  private final RateLimitListener listener;
  private final boolean timed;
  private final Pause pause;

  private VersionedStoreRateLimiter(Builder b, Policy policy, Ticker ticker) {
    super(b, policy);
    this.policy = policy;
    this.defaultPartition = StoredId.policy(policy.name());
    this.store = b.store;
    this.ticker = ticker;
    this.maxRetries = b.maxRetries;
    this.toleranceMicros = b.clockTolerance.toNanos() / 1_000;
    this.listener = listener();
    this.timed = this.listener != RateLimitListener.NONE;
    this.pause = b.pause;
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

  @Override public Decision tryAcquireAt(String key, long permits, Policy policy, long nowMicros) {
    return acquireAt(key, permits, policy, nowMicros);
  }

  @Override public Decision peekAt(String key, Policy policy, long nowMicros) {
    return peekAtTime(key, policy, nowMicros);
  }

  @Override public Refund refundAt(Ticket ticket, long nowMicros) {
    return refundAtTime(ticket, nowMicros);
  }

  @Override public Settlement settleAt(Ticket ticket, long actualPermits, long nowMicros) {
    return settleAtTime(ticket, actualPermits, nowMicros);
  }

  // ---------------------------------------------------------------------------------------------
  // The step: the compare-and-set loop
  // ---------------------------------------------------------------------------------------------

  @Override protected Policy compile(Policy p) {
    return runnable(p);
  }

  @Override protected boolean reportsOwnStoreCalls() {
    return true;
  }

  @Override protected long nanoTime() {
    return pause.nanoTime();
  }

  /**
   * Read the record; run the model at {@code now}; write back with a compare-and-set on the version
   * read when the step changed the state, retrying a lost race after a jittered pause. A refusal
   * and a peek write nothing.
   */
  @Override protected StepResult step(Policy p, Step step, String key, long permits, Ticket ticket, long now, long deadline) {
    Algorithm alg = p.algorithm();
    long stamp = ticket == null ? 0 : ticket.stamp();
    Outcome out = new Outcome();
    StepResult[] r = new StepResult[1];
    casLoop(p, key, now, deadline, ticket, r, (st, spent) -> {
      if (spent) { // this ticket was applied already (a retry after an unknown outcome): no effect
        ReferenceModel.peek(alg, st, now, out);
        r[0] = StepResult.decided(out.allowed(), out.remaining(), out.resetAt(), out.retryAfter(), 0, false);
        return false;
      }
      switch (step) {
        case ACQUIRE -> ReferenceModel.acquire(alg, st, now, permits, out);
        case PEEK -> ReferenceModel.peek(alg, st, now, out);
        case REFUND -> ReferenceModel.refund(alg, st, now, permits, stamp, out);
        case OVERRUN -> ReferenceModel.settle(alg, st, now, permits, stamp, out);
      }
      r[0] = result(out);
      return out.wrote();
    });
    return r[0];
  }

  /**
   * A coalesced batch: one read, the model run for each request in order on the state the one
   * before left, and one compare-and-set when any of them changed it; a lost race recomputes the
   * whole batch on the state that won.
   */
  @Override protected StepResult[] stepBatch(Policy p, String scope, String key, long[] permits, long now, long deadline) {
    Algorithm alg = p.algorithm();
    Outcome out = new Outcome();
    StepResult[] rs = new StepResult[permits.length];
    casLoop(p, key, now, deadline, null, rs, (st, spent) -> {
      boolean wrote = false;
      for (int i = 0; i < permits.length; i++) {
        ReferenceModel.acquire(alg, st, now, permits[i], out);
        rs[i] = result(out);
        wrote |= out.wrote();
      }
      return wrote;
    });
    return rs;
  }

  /**
   * Runs the model on a record's state; fills the results; true when it changed the state.
   * {@code spent}: the step's ticket is recorded as applied already.
   */
  private interface ModelRun {
    boolean run(long[] state, boolean spent);
  }

  /**
   * The compare-and-set loop: read, {@code run} the model, write back on the version read when it
   * changed the state; a lost race runs it again on the state that won. A failure (corrupt state,
   * clock, contention) fills every slot of {@code results}.
   */
  private void casLoop(Policy p, String key, long now, long deadline, Ticket ticket, StepResult[] results, ModelRun run) {
    boolean refund = ticket != null;
    Algorithm alg = p.algorithm();
    String partition = partition(p);
    String id = StoredId.key(p.name(), key);
    long[] st = new long[ReferenceModel.STATE_SIZE];
    long[] meta = new long[1];
    for (int attempt = 0; ; attempt++) {
      StoredRecord rec;
      try {
        rec = read(p, partition, id, deadline);
      } catch (RuntimeException e) {
        // Nothing was written yet: a refund or settlement that fails here can be retried.
        throw refund ? new StoreNotReachedException("could not read the record", e) : e;
      }
      StepResult bad = load(alg, rec, id, now, st, meta);
      if (bad != null) {
        Arrays.fill(results, bad);
        return;
      }
      // A ticket's id is written in the same compare-and-set that applies it (issue 26), and kept
      // (the record with it) until the ticket's life ends: a retry finds it and changes nothing.
      String spent = rec == null ? "" : StateFormat.spentTail(rec.value());
      if (!run.run(st, ticket != null && StateFormat.spent(spent, ticket.id(), now))) {
        return;
      }
      if (ticket != null) {
        spent = StateFormat.spend(spent, ticket.id(), ModelSteps.ticketExpiresAt(ticket), now);
      }
      long expected = rec == null ? VersionedStore.ABSENT : rec.version();
      String value = StateFormat.encode(alg, st, rec == null ? now : Math.max(now, meta[0]), spent);
      long expiresAt = Math.max(ReferenceModel.expiresAt(alg, st), StateFormat.latestEnd(spent));
      if (cas(p, partition, id, expected, value, expiresAt, deadline)) {
        return;
      }
      if (attempt >= maxRetries || !backoff(attempt, deadline)) {
        Arrays.fill(results, StepResult.contention("compare-and-set lost " + (attempt + 1) + " times in a row"));
        return;
      }
    }
  }

  private static StepResult result(Outcome out) {
    return ModelSteps.of(out);
  }

  /**
   * Deletes {@code key}'s record under {@code policy}, whatever it holds (this is also how a record
   * refused as {@link Reason#CORRUPT_STATE} is cleared).
   */
  @Override protected void delete(Policy p, String key, long deadline) {
    String partition = partition(p);
    String id = StoredId.key(p.name(), key);
    for (int attempt = 0; ; attempt++) {
      StoredRecord rec = read(p, partition, id, deadline);
      if (rec == null || delete(p, partition, id, rec.version(), deadline)) {
        return;
      }
      if (attempt >= maxRetries || !backoff(attempt, deadline)) {
        throw new StoreException("reset gave up after " + (attempt + 1) + " conflicting writes");
      }
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
    if (!Checks.validClock(now)) {
      throw new IllegalStateException("clock reading " + now + " us is not plausible (it must be in 1..2^52 - 2^49); "
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
          if (malformedIds.size() < SweepResult.MAX_NAMED) {
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
    return new SweepResult(scanned, deleted, live, changed, malformed, malformedIds);
  }

  private List<StoredRecord> storeList(Policy p, String partition, String after) {
    long t0 = timed ? System.nanoTime() : 0;
    try {
      List<StoredRecord> page = store.list(partition, after, SWEEP_PAGE, nanoTime() + timeoutNanos());
      if (timed) {
        listener.onStoreCall(p, System.nanoTime() - t0, null);
      }
      return Objects.requireNonNull(page, "store returned a null page");
    } catch (RuntimeException e) {
      if (timed) {
        listener.onStoreCall(p, System.nanoTime() - t0, e);
      }
      throw e instanceof StoreException se ? se
          : new StoreException("sweep of policy '" + p.name() + "' could not list its records", e);
    }
  }

  private boolean sweepDelete(Policy p, String partition, StoredRecord rec) {
    try {
      return delete(p, partition, rec.id(), rec.version(), nanoTime() + timeoutNanos());
    } catch (RuntimeException e) {
      throw e instanceof StoreException se ? se
          : new StoreException("sweep of policy '" + p.name() + "' could not delete an expired record", e);
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
  // Store calls
  // ---------------------------------------------------------------------------------------------

  /** {@code policy}, when a record can hold its state: every algorithm but the sliding log ({@link AlgorithmKind#requireFixedSize}). */
  static Policy runnable(Policy policy) {
    return AlgorithmKind.requireFixedSize(policy, "a versioned store");
  }

  /**
   * Loads {@code rec} into {@code st} (all zeros when absent or written under another algorithm) and
   * returns null, or the result that says why it cannot be used.
   */
  private StepResult load(Algorithm alg, StoredRecord rec, String id, long now, long[] st, long[] meta) {
    st[0] = 0;
    st[1] = 0;
    st[2] = 0;
    if (rec == null) {
      return null;
    }
    if (rec.version() <= 0 || !id.equals(rec.id())) {
      return StepResult.corrupt("record " + id + " has a bad version or id");
    }
    int kind = StateFormat.decode(alg, rec.value(), st, meta);
    if (kind == StateFormat.MALFORMED) {
      return StepResult.corrupt("record " + id + " is not a state Sluice wrote");
    }
    if (kind == StateFormat.FOREIGN) {
      st[0] = 0;
      st[1] = 0;
      st[2] = 0;
    }
    if (meta[0] - now > Checks.CLOCK_TOLERANCE_MICROS || (kind == StateFormat.OK && ReferenceModel.tooFarAhead(alg, st, now))) {
      return StepResult.corrupt("record " + id + " lies further ahead of the clock than any reading within "
          + "Checks.CLOCK_TOLERANCE_MICROS could have written it");
    }
    if (now < meta[0] - toleranceMicros) {
      return StepResult.invalidClock("clock reading " + now + " us is behind the record's last write by more than the tolerance");
    }
    return null;
  }

  private String partition(Policy p) {
    return p.name().equals(policy.name()) ? defaultPartition : StoredId.policy(p.name());
  }

  private StoredRecord read(Policy p, String partition, String id, long deadline) {
    beforeDeadline(deadline);
    long t0 = timed ? System.nanoTime() : 0;
    try {
      StoredRecord r = store.read(partition, id, deadline);
      reported(p, t0, null);
      return r;
    } catch (RuntimeException e) {
      reported(p, t0, e);
      throw e;
    }
  }

  private boolean cas(Policy p, String partition, String id, long expected, String value, long expiresAt, long deadline) {
    beforeDeadline(deadline);
    long t0 = timed ? System.nanoTime() : 0;
    try {
      boolean ok = store.compareAndSet(partition, id, expected, value, nextVersion(expected), expiresAt, deadline);
      reported(p, t0, null);
      return ok;
    } catch (RuntimeException e) {
      reported(p, t0, e);
      throw e;
    }
  }

  private boolean delete(Policy p, String partition, String id, long version, long deadline) {
    beforeDeadline(deadline);
    long t0 = timed ? System.nanoTime() : 0;
    try {
      boolean ok = store.deleteIfVersion(partition, id, version, deadline);
      reported(p, t0, null);
      return ok;
    } catch (RuntimeException e) {
      reported(p, t0, e);
      throw e;
    }
  }

  private void beforeDeadline(long deadline) {
    if (nanoTime() - deadline >= 0) {
      throw new StoreTimeoutException("the call's deadline passed before the next store call");
    }
  }

  private void reported(Policy p, long t0, Throwable error) {
    if (timed) {
      listener.onStoreCall(p, System.nanoTime() - t0, error);
    }
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
  private boolean backoff(int attempt, long deadline) {
    long cap = Math.min(BACKOFF_MAX_NANOS, BACKOFF_BASE_NANOS << Math.min(attempt, 20));
    long wait = ThreadLocalRandom.current().nextLong(cap + 1);
    long left = deadline - pause.nanoTime();
    if (left <= 0) {
      return false;
    }
    if (wait > 0 && !pause.park(Math.min(wait, left))) {
      return false;
    }
    return deadline - pause.nanoTime() > 0;
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

  @Override public String toString() {
    return "VersionedStoreRateLimiter[policy=" + policy.name() + ", store=" + store.getClass().getSimpleName()
        + ", timeout=" + Duration.ofNanos(timeoutNanos()) + ", maxRetries=" + maxRetries + "]";
  }

  /** Builds a {@link VersionedStoreRateLimiter}; every setter validates at once. */
  public static final class Builder extends StoreBackedRateLimiter.Builder<Builder> {
    private final VersionedStore store;
    private int maxRetries = DEFAULT_MAX_RETRIES;
    private Duration clockTolerance = DEFAULT_CLOCK_TOLERANCE;
    private Pause pause = Pause.SYSTEM;

    private Builder(Policy policy, VersionedStore store) {
      super(policy, DEFAULT_TIMEOUT);
      this.store = Checks.notNull("store", store);
      runnable(policy);
      ticker(Ticker.system()); // the engine has no clock of its own: default the system's
    }

    @Override protected boolean batches() {
      return true;
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

    public VersionedStoreRateLimiter build() {
      return new VersionedStoreRateLimiter(this, policy, suppliedTicker());
    }
  }
}
