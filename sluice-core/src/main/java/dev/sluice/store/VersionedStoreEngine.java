package dev.sluice.store;

import dev.sluice.Algorithm;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.internal.AlgorithmKind;
import dev.sluice.internal.Checks;
import dev.sluice.internal.ModelSteps;
import dev.sluice.internal.StoredId;
import dev.sluice.model.Outcome;
import dev.sluice.model.ReferenceModel;
import dev.sluice.spi.Backend;
import dev.sluice.spi.Capabilities;
import dev.sluice.spi.StepResult;
import dev.sluice.spi.StoreException;
import dev.sluice.spi.StoreNotReachedException;
import dev.sluice.spi.StoreTimeoutException;
import dev.sluice.spi.StoredRecord;
import dev.sluice.spi.VersionedStore;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The compare-and-set engine as the pipeline's {@link Backend}: a step reads a key's record, runs
 * the reference model on it client-side, and writes it back with a compare-and-set on the version
 * read, retrying a lost race with jittered backoff until {@code maxRetries} or the deadline; and the
 * sweep. {@link VersionedStoreRateLimiter} is its public face (see there for the rules).
 */
final class VersionedStoreEngine implements Backend<Policy> {
  private static final System.Logger LOG = System.getLogger(VersionedStoreRateLimiter.class.getName());
  /** The engine runs the fixed-size algorithms, batches them, and reports each of its store calls itself. */
  static final Capabilities CAPABILITIES = Capabilities.fixedSize("a versioned store").withBatches().withOwnStoreCallReports();
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
  private final VersionedStoreRateLimiter.Pause pause;
  private final long timeoutNanos;
  private final String description;

  VersionedStoreEngine(Policy policy, VersionedStore store, Ticker ticker, int maxRetries, long toleranceMicros,
                       RateLimitListener listener, VersionedStoreRateLimiter.Pause pause, long timeoutNanos, String description) {
    this.policy = policy;
    this.defaultPartition = StoredId.policy(policy.name());
    this.store = store;
    this.ticker = ticker;
    this.maxRetries = maxRetries;
    this.toleranceMicros = toleranceMicros;
    this.listener = listener;
    this.timed = listener != RateLimitListener.NONE;
    this.pause = pause;
    this.timeoutNanos = timeoutNanos;
    this.description = description;
  }

  @Override public Capabilities capabilities() {
    return CAPABILITIES;
  }

  /** The policy itself: the capabilities already refused what a record cannot hold. */
  @Override public Policy compile(Policy p) {
    return p;
  }

  @Override public long nanoTime() {
    return pause.nanoTime();
  }

  @Override public String describe() {
    return description;
  }

  /**
   * Read the record; run the model at {@code now}; write back with a compare-and-set on the version
   * read when the step changed the state, retrying a lost race after a jittered pause. A refusal
   * and a peek write nothing.
   */
  @Override public StepResult step(Policy p, Step step, String key, long permits, Ticket ticket, long now, long deadline) {
    long stamp = ticket == null ? 0 : ticket.stamp();
    Outcome out = new Outcome();
    StepResult[] r = new StepResult[1];
    casLoop(p, key, now, deadline, ticket, r, (alg, st, spent) -> {
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
  @Override public StepResult[] stepBatch(Policy p, String scope, String key, long[] permits, long now, long deadline) {
    Outcome out = new Outcome();
    StepResult[] rs = new StepResult[permits.length];
    casLoop(p, key, now, deadline, null, rs, (alg, st, spent) -> {
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
   * Runs the model of {@code alg} (the call's, or the key's override) on a record's state; fills the
   * results; true when it changed the state. {@code spent}: the step's ticket is recorded as applied already.
   */
  private interface ModelRun {
    boolean run(Algorithm alg, long[] state, boolean spent);
  }

  /**
   * The compare-and-set loop: read, {@code run} the model, write back on the version read when it
   * changed the state; a lost race runs it again on the state that won. A failure (corrupt state,
   * clock, contention) fills every slot of {@code results}.
   */
  private void casLoop(Policy p, String key, long now, long deadline, Ticket ticket, StepResult[] results, ModelRun run) {
    boolean refund = ticket != null;
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
      Algorithm override;
      try {
        override = rec == null ? null : StateFormat.override(rec.value());
      } catch (IllegalArgumentException notOurs) {
        Arrays.fill(results, StepResult.corrupt("record " + id + " carries an override Sluice did not write"));
        return;
      }
      // The key's override decides, whatever the caller passed (KeyOverrides); the results say so.
      Policy by = override == null || override.equals(p.algorithm()) ? p : new Policy(p.name(), override);
      Algorithm alg = by.algorithm();
      StepResult bad = load(alg, rec, id, now, st, meta);
      if (bad != null) {
        Arrays.fill(results, bad);
        return;
      }
      // A ticket's id is written in the same compare-and-set that applies it (issue 26), and kept
      // (the record with it) until the ticket's life ends: a retry finds it and changes nothing.
      String spent = rec == null ? "" : StateFormat.spentTail(rec.value());
      boolean wrote = run.run(alg, st, ticket != null && StateFormat.spent(spent, ticket.id(), now));
      if (by != p) {
        for (int i = 0; i < results.length; i++) {
          results[i] = results[i].failure() != null ? results[i] : results[i].decidedBy(by);
        }
      }
      if (!wrote) {
        return;
      }
      long writtenAt = rec == null ? now : Math.max(now, meta[0]);
      if (ticket != null) {
        int head = StateFormat.encode(alg, st, writtenAt, override, "").length();
        spent = StateFormat.spend(spent, ticket.id(), ModelSteps.ticketExpiresAt(ticket), now, StateFormat.room(head));
      }
      long expected = rec == null ? VersionedStore.ABSENT : rec.version();
      String value = StateFormat.encode(alg, st, writtenAt, override, spent);
      long expiresAt = override != null ? Checks.MAX_CLOCK // configuration: never expires
          : Math.max(ReferenceModel.expiresAt(alg, st), StateFormat.latestEnd(spent));
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
   * Sets ({@code override} non-null) or clears {@code key}'s override under {@code p.name()} by a
   * compare-and-set on its record, retrying a lost race: the count is kept when the algorithm stays
   * the same, else the key starts afresh. Returns whether the record had an override.
   */
  boolean setOverride(Policy p, String key, Algorithm override) {
    long now = ticker.nowMicros();
    if (!Checks.validClock(now)) {
      throw new IllegalStateException("clock reading " + now + " us is not plausible (it must be in 1..2^52 - 2^49)");
    }
    long deadline = pause.nanoTime() + timeoutNanos;
    String partition = partition(p);
    String id = StoredId.key(p.name(), key);
    for (int attempt = 0; ; attempt++) {
      StoredRecord rec = read(p, partition, id, deadline);
      Algorithm had;
      try {
        had = rec == null ? null : StateFormat.override(rec.value());
      } catch (IllegalArgumentException notOurs) {
        throw new StoreException("record " + id + " carries an override Sluice did not write; reset the key first");
      }
      if (override == null && had == null) {
        return false;
      }
      // The state under the algorithm that decides from now on: kept when it is the one that decided so far.
      Algorithm before = had != null ? had : p.algorithm();
      Algorithm after = override != null ? override : p.algorithm();
      long[] st = new long[ReferenceModel.STATE_SIZE];
      long[] meta = {now};
      boolean keep = rec != null && AlgorithmKind.of(before) == AlgorithmKind.of(after)
          && StateFormat.decode(after, rec.value(), st, meta) == StateFormat.OK;
      if (!keep) {
        st = new long[ReferenceModel.STATE_SIZE];
      }
      String spent = rec == null ? "" : StateFormat.spentTail(rec.value());
      long writtenAt = Math.max(now, meta[0]);
      long expected = rec == null ? VersionedStore.ABSENT : rec.version();
      boolean done;
      if (override == null && (!keep || Math.max(ReferenceModel.expiresAt(after, st), StateFormat.latestEnd(spent)) <= now)) {
        done = delete(p, partition, id, expected, deadline); // cleared, and no count left that matters
      } else {
        long expiresAt = override != null ? Checks.MAX_CLOCK // configuration: never expires
            : Math.max(ReferenceModel.expiresAt(after, st), StateFormat.latestEnd(spent));
        done = cas(p, partition, id, expected, StateFormat.encode(after, st, writtenAt, override, spent), expiresAt, deadline);
      }
      if (done) {
        return had != null;
      }
      if (attempt >= maxRetries || !backoff(attempt, deadline)) {
        throw new StoreException("override gave up after " + (attempt + 1) + " conflicting writes");
      }
    }
  }

  /** {@code key}'s override under {@code p.name()}, or null. */
  Algorithm override(Policy p, String key) {
    String id = StoredId.key(p.name(), key);
    StoredRecord rec = read(p, partition(p), id, pause.nanoTime() + timeoutNanos);
    try {
      return rec == null ? null : StateFormat.override(rec.value());
    } catch (IllegalArgumentException notOurs) {
      throw new StoreException("record " + id + " carries an override Sluice did not write", notOurs);
    }
  }

  /**
   * Deletes {@code key}'s record under {@code p}, whatever it holds, retrying a lost race; a record
   * with an override keeps only the override (configuration), its count gone.
   */
  @Override public void delete(Policy p, String key, long deadline) {
    String partition = partition(p);
    String id = StoredId.key(p.name(), key);
    for (int attempt = 0; ; attempt++) {
      StoredRecord rec = read(p, partition, id, deadline);
      Algorithm override;
      try {
        override = rec == null ? null : StateFormat.override(rec.value());
      } catch (IllegalArgumentException notOurs) {
        override = null; // a record Sluice did not write: deleted, as any malformed record is
      }
      if (rec == null) {
        return;
      }
      boolean done = override == null ? delete(p, partition, id, rec.version(), deadline)
          : cas(p, partition, id, rec.version(), StateFormat.encode(override, new long[ReferenceModel.STATE_SIZE],
              Math.max(1, ticker.nowMicros()), override, ""), Checks.MAX_CLOCK, deadline);
      if (done) {
        return;
      }
      if (attempt >= maxRetries || !backoff(attempt, deadline)) {
        throw new StoreException("reset gave up after " + (attempt + 1) + " conflicting writes");
      }
    }
  }

  /** The sweep of {@code policy}'s partition ({@link VersionedStoreRateLimiter#sweep(Policy)}). */
  SweepResult sweep(Policy policy) {
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
      if (page.size() < VersionedStoreRateLimiter.SWEEP_PAGE || after == null) {
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
      List<StoredRecord> page = store.list(partition, after, VersionedStoreRateLimiter.SWEEP_PAGE, pause.nanoTime() + timeoutNanos);
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
      return delete(p, partition, rec.id(), rec.version(), pause.nanoTime() + timeoutNanos);
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
    if (pause.nanoTime() - deadline >= 0) {
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
}
