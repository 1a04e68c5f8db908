package dev.sluice.spi;

import static dev.sluice.spi.Backend.STORE_CLOCK;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.internal.Checks;
import dev.sluice.internal.DeadlineTimer;
import dev.sluice.internal.TicketSpending;
import dev.sluice.internal.Pipelines;
import dev.sluice.model.ReferenceModel;
import dev.sluice.spi.Backend.Step;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;

/**
 * The one decision pipeline of every store-backed limiter (Redis, PostgreSQL, the versioned-store
 * engine, a user's own store), in the spirit of Bucket4j's proxy managers: a {@link Backend}
 * supplies only its atomic {@link Backend#step} against its store (one EVALSHA, one statement, one
 * compare-and-set loop) and translates the reply into a {@link StepResult}; everything else is
 * decided here, once:
 *
 * <ul>
 *   <li>validation of keys, policies and permits ({@link Checks}), with the backend's own
 *       {@link Backend#compile} rule and {@link Capabilities#require} for what it can run; per-call override policies compiled once
 *       (at most {@value #MAX_CACHED_PLANS} kept);
 *   <li>the clock: a supplied {@link Ticker} read once per call and refused outside 1..2^52 - 2^49 us as
 *       {@link Reason#INVALID_CLOCK}, or {@link Backend#STORE_CLOCK} for a store that reads its own;
 *   <li>the deadline of every call ({@code timeout}), also on the asynchronous path, where a timer
 *       wheel ({@link DeadlineTimer}) completes the decision, off the timer's thread, and cancels the
 *       store call;
 *   <li>the one mapping from a {@link StepResult} or a store exception to a {@link Decision}, and
 *       the {@link FailureMode} for every failure (closed, open or fallback, each with its
 *       configured retry), peeks and resets included;
 *   <li>tickets: issued by this limiter's {@link Ticket.Issuer}, refunded exactly once, a foreign
 *       ticket routed to the fallback (whose own it may be) or {@link Refund#NO_EFFECT}; the step
 *       records the ticket's id as spent in the store, atomically with applying it, so a refund
 *       that certainly did not reach the store ({@link StoreNotReachedException}, or a step that
 *       wrote nothing) is {@link Refund#FAILED} and one whose outcome is unknown (a timeout after
 *       sending) is {@link Refund#UNKNOWN}, and either may be retried: the retry is the one
 *       application or no effect; a ticket past its life ({@link ReferenceModel#ticketExpiresAt})
 *       has no effect; a settlement (a refund of the unused part, or an {@link Backend.Step#OVERRUN})
 *       follows the same rules;
 *   <li>listener events: one decision event per acquire (a peek charges nothing and is no decision,
 *       as on the memory tier), one store-call event per step, one refund event per refund;
 *   <li>request coalescing, for a backend that can decide a batch ({@link Backend#stepBatch}): acquires
 *       for one budget (within one {@link Backend#batchScope scope}, if the backend has one) that arrive
 *       while a store call for it is in flight wait for it, then go together in one store call
 *       that decides them in arrival order at one instant, each exactly as the reference model
 *       decides that sequence; at most {@code maxBatch} per call, and no request waits past its
 *       own deadline. Batch assembly, dispatch and withdrawal at the
 *       deadline are the package's {@code Coalescer} (over {@code Lanes}); this class maps each
 *       request's share to its decision.
 * </ul>
 * A budget is its policy's name and the key: a backend keys its state by those two alone, so a
 * per-call override with the same name and other numbers applies them to the existing state.
 *
 * <p>Final, and generic in nothing: every store-backed limiter is this class around a backend, so
 * its public surface is {@link RateLimiter}'s, {@link #close()} (which closes the backend) and
 * {@code toString}. {@link #builder} builds one around any {@link Backend}; Sluice's own stores
 * ({@code RedisRateLimiter}, {@code JdbcRateLimiter}, {@code VersionedStoreRateLimiter}) build one
 * through their builders, which extend {@link Settings}.
 *
 * <p>This file is over 500 lines because it is the pipeline and its two public nested builders;
 * coalescing and the asynchronous decision are in the package-private {@code Coalescer} and
 * {@code AsyncDecision}.
 */
public final class StoreRateLimiter implements RateLimiter, AutoCloseable {
  /** Most per-call override policies kept compiled; past it an override is compiled per call. */
  public static final int MAX_CACHED_PLANS = 256;
  /** The default and largest number of acquires one coalesced store call decides. */
  public static final int MAX_BATCH = 64;

  /** Deadline of every call unless the builder says otherwise (a backend's builder may say its own). */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofMillis(500);

  private static final System.Logger LOG = System.getLogger(StoreRateLimiter.class.getName());

  static {
    Pipelines.grant(new Pipelines.Access() {
      @Override public Decision acquireAt(StoreRateLimiter l, String key, long permits, Policy p, long now) {
        return l.acquireAt(key, permits, p, now);
      }

      @Override public Decision peekAt(StoreRateLimiter l, String key, Policy p, long now) {
        return l.peekAtTime(key, p, now);
      }

      @Override public Refund refundAt(StoreRateLimiter l, Ticket ticket, long now) {
        return l.refundAtTime(ticket, now);
      }

      @Override public Settlement settleAt(StoreRateLimiter l, Ticket ticket, long actualPermits, long now) {
        return l.settleAtTime(ticket, actualPermits, now);
      }
    });
  }

  private final Policy policy;
  private final Backend<Object> backend;
  private final Capabilities capabilities;
  private final boolean asyncSteps;
  private final boolean reportsOwnStoreCalls;
  private final Object defaultPlan;
  private final boolean defaultBatches;
  private final ConcurrentHashMap<Policy, Object> plans = new ConcurrentHashMap<>();
  private final FailureMode failureMode;
  private final Ticker ticker;
  private final RateLimitListener listener;
  private final long timeoutNanos;
  private final Ticket.Issuer issuer;
  private final Coalescer<Object> coalescer; // null: coalescing off

  @SuppressWarnings("unchecked")
  private StoreRateLimiter(Settings<?> b, Backend<?> backend) {
    this.policy = b.policy;
    this.backend = (Backend<Object>) Checks.notNull("backend", backend);
    this.capabilities = Checks.notNull("capabilities", backend.capabilities());
    this.asyncSteps = capabilities.asyncSteps();
    this.reportsOwnStoreCalls = capabilities.reportsOwnStoreCalls();
    this.defaultPlan = this.backend.compile(capabilities.require(policy));
    this.defaultBatches = capabilities.batches(policy.algorithm());
    this.failureMode = b.failureMode;
    this.ticker = b.ticker;
    this.listener = b.listener();
    this.timeoutNanos = b.timeout.toNanos();
    this.issuer = b.issuer != null ? b.issuer : new Ticket.Issuer();
    this.coalescer = b.maxBatch > 1 && capabilities.batchesAny() ? new Coalescer<>(this, b.maxBatch) : null;
  }

  /**
   * A limiter whose default policy is {@code policy}, deciding against {@code backend} (default
   * timeout {@link #DEFAULT_TIMEOUT}, failure mode closed, the store's own clock unless a ticker is
   * supplied). Closing the limiter closes the backend.
   */
  public static Builder builder(Policy policy, Backend<?> backend) {
    return new Builder(policy, Checks.notNull("backend", backend));
  }

  // ---------------------------------------------------------------------------------------------
  // What the coalescer and the asynchronous decision read
  // ---------------------------------------------------------------------------------------------

  long timeoutNanos() {
    return timeoutNanos;
  }

  long nanoTime() {
    return backend.nanoTime();
  }

  boolean stepsAsync() {
    return asyncSteps;
  }

  String batchScope(Object plan) {
    return backend.batchScope(plan);
  }

  Reason classify(Throwable error) {
    return backend.classify(error);
  }

  StepResult[] stepBatch(Object plan, String scope, String key, long[] permits, long now, long deadlineNanos) throws Exception {
    return backend.stepBatch(plan, scope, key, permits, now, deadlineNanos);
  }

  CompletableFuture<StepResult[]> stepBatchAsync(Object plan, String scope, String key, long[] permits, long now, long deadlineNanos) {
    return backend.stepBatchAsync(plan, scope, key, permits, now, deadlineNanos);
  }

  CompletableFuture<StepResult> stepAsync(Object plan, Step step, String key, long permits, Ticket ticket, long now, long deadlineNanos) {
    return backend.stepAsync(plan, step, key, permits, ticket, now, deadlineNanos);
  }

  /** The reading a step gets: the supplied clock's, or {@link Backend#STORE_CLOCK}. */
  private long clock() {
    return ticker != null ? ticker.nowMicros() : STORE_CLOCK;
  }

  /** Whether coalescing may take an acquire of {@code plan} under {@code p}. */
  private boolean batches(Object plan, Policy p) {
    return plan == defaultPlan ? defaultBatches : capabilities.batches(p.algorithm());
  }

  // ---------------------------------------------------------------------------------------------
  // The pipeline
  // ---------------------------------------------------------------------------------------------

  @Override public final Policy policy() {
    return policy;
  }

  @Override public final Decision tryAcquire(String key, long permits, Policy policy) {
    return acquireAt(key, permits, policy, clock());
  }

  @Override public final CompletionStage<Decision> tryAcquireAsync(String key, long permits, Policy p) {
    Checks.key(key);
    Object plan = plan(p);
    Checks.permits(permits, p.limit(), p.name());
    long now = clock();
    if (!plausible(now)) {
      return CompletableFuture.completedFuture(finish(failed(p, Step.ACQUIRE, key, permits, Reason.INVALID_CLOCK, null, now), key));
    }
    Coalescer.LaneId lane = coalescer != null && asyncSteps && batches(plan, p) ? coalescer.lane(plan, p, key) : null;
    return new AsyncDecision<>(this, coalescer, plan, p, key, permits, now).start(lane);
  }

  @Override public final Decision peek(String key, Policy policy) {
    return peekAtTime(key, policy, clock());
  }

  @Override public final Refund refund(Ticket ticket) {
    return refundAtTime(ticket, clock());
  }

  /**
   * Deletes {@code key}'s state under {@code policy} and, in fallback mode, the fallback limiter's
   * count too. A failure is logged and reported to the listener, never thrown.
   */
  @Override public final void reset(String key, Policy p) {
    Checks.key(key);
    Object plan = plan(p);
    long start = nanoTime();
    Throwable error = null;
    try {
      backend.delete(plan, key, start + timeoutNanos);
    } catch (IllegalArgumentException e) {
      throw e;
    } catch (Exception e) {
      error = caught(e);
    }
    reportStoreCall(p, start, error);
    if (error != null) {
      LOG.log(System.Logger.Level.WARNING, "reset for policy '" + p.name() + "' failed: " + error);
    }
    failureMode.reset(key, p);
  }

  /** {@link #tryAcquire} at {@code nowMicros} (or {@link Backend#STORE_CLOCK}), for a limiter that lets callers supply the instant. */
  Decision acquireAt(String key, long permits, Policy p, long nowMicros) {
    Checks.key(key);
    Object plan = plan(p);
    Checks.permits(permits, p.limit(), p.name());
    Coalescer.LaneId lane = coalescer != null && plausible(nowMicros) && batches(plan, p) ? coalescer.lane(plan, p, key) : null;
    if (lane != null) {
      return finish(coalescer.acquire(plan, lane, permits, nowMicros), key);
    }
    return finish(decide(plan, p, Step.ACQUIRE, key, permits, nowMicros), key);
  }

  /** {@link #peek} at {@code nowMicros} (or {@link Backend#STORE_CLOCK}). */
  Decision peekAtTime(String key, Policy p, long nowMicros) {
    Checks.key(key);
    Object plan = plan(p);
    // Not finish(): a peek is no decision, so health probes and dashboards never inflate the counts.
    return decide(plan, p, Step.PEEK, key, 1, nowMicros);
  }

  /** {@link #refund} at {@code nowMicros} (or {@link Backend#STORE_CLOCK}): {@link TicketSpending}'s rule around {@link #spend}. */
  Refund refundAtTime(Ticket ticket, long nowMicros) {
    return TicketSpending.refund(issuer, null, failureMode, listener, ticket, nowMicros, plausible(nowMicros), this::spend);
  }

  @Override public final Settlement settle(Ticket ticket, long actualPermits) {
    return settleAtTime(ticket, actualPermits, clock());
  }

  /**
   * {@link #settle} at {@code nowMicros} (or {@link Backend#STORE_CLOCK}): one step, a {@link Step#REFUND}
   * of the unused part or an {@link Step#OVERRUN} of the excess, under the same once-only rules as a
   * refund (a settlement that may have reached the store stays spent; one that certainly did not
   * can be retried).
   */
  Settlement settleAtTime(Ticket ticket, long actualPermits, long nowMicros) {
    return TicketSpending.settle(issuer, null, failureMode, listener, ticket, actualPermits, nowMicros, plausible(nowMicros),
        this::spend);
  }

  /**
   * The store step of a refund or a settlement, for {@link TicketSpending}, which claimed the ticket,
   * checked the clock and the ticket's life, and gives the claim back after FAILED or UNKNOWN (the
   * store's spent record, written in the step itself, keeps a retry from applying twice).
   */
  private Refund spend(Ticket ticket, long delta, boolean refund, long now) {
    Step step = delta > 0 ? Step.OVERRUN : Step.REFUND;
    boolean settling = !refund;
    Policy p = ticket.policy();
    Object plan = plan(p);
    long start = nanoTime();
    Throwable error = null;
    Refund result;
    try {
      StepResult r = backend.step(plan, step, ticket.key(), Math.abs(delta), ticket, now, start + timeoutNanos);
      result = r.failure() != null ? Refund.FAILED // corrupt state, clock or contention: the step wrote nothing
          : r.wrote() ? Refund.APPLIED : Refund.NO_EFFECT;
    } catch (Exception e) {
      error = caught(e);
      result = error instanceof StoreNotReachedException ? Refund.FAILED : Refund.UNKNOWN;
    }
    reportStoreCall(p, start, error);
    if (error != null) {
      LOG.log(System.Logger.Level.WARNING, (settling ? "settlement" : "refund") + " for policy '" + p.name() + "' "
          + (result == Refund.FAILED ? "failed; " + (settling ? "the reservation stays the charge: " : "the limiter stays stricter: ")
          : "has an unknown outcome; a retry applies it at most once: ") + error);
    }
    return result;
  }

  private Object plan(Policy p) {
    Checks.notNull("policy", p);
    if (p == policy || p.equals(policy)) {
      return defaultPlan;
    }
    Object cached = plans.get(p);
    if (cached == null) {
      cached = backend.compile(capabilities.require(p));
      if (plans.size() < MAX_CACHED_PLANS) {
        plans.putIfAbsent(p, cached);
      }
    }
    return cached;
  }

  /** The store's own clock, or a supplied reading in 1..2^52 - 2^49 us (the year 2094). */
  private boolean plausible(long now) {
    return TicketSpending.plausible(ticker != null, now);
  }

  Decision decide(Object plan, Policy p, Step step, String key, long permits, long now) {
    if (!plausible(now)) {
      return failed(p, step, key, permits, Reason.INVALID_CLOCK, null, now);
    }
    long start = nanoTime();
    StepResult r = null;
    Throwable error = null;
    try {
      r = backend.step(plan, step, key, permits, null, now, start + timeoutNanos);
    } catch (IllegalArgumentException e) {
      throw e; // a programmer error the backend found (a blank tenant, say): never a store failure
    } catch (Exception e) {
      error = caught(e);
    }
    reportStoreCall(p, start, error);
    return r != null ? toDecision(r, p, step, key, permits, now) : failed(p, step, key, permits, backend.classify(error), error, now);
  }

  /** The one mapping from what a store answered to a decision. */
  Decision toDecision(StepResult r, Policy p, Step step, String key, long permits, long now) {
    if (r.failure() != null) {
      return failed(p, step, key, permits, r.failure(), new StoreException(r.detail()), now);
    }
    Policy by = r.decidedBy() != null ? r.decidedBy() : p;
    if (r.allowed()) {
      return Decision.allowed(by, r.remaining(), r.resetAt(), step == Step.ACQUIRE ? issuer.issue(by, key, permits, r.stamp()) : null);
    }
    return Decision.refused(by, Reason.LIMIT_EXCEEDED, r.remaining(), r.resetAt(), r.retryAfter());
  }

  Decision failed(Policy p, Step step, String key, long permits, Reason reason, Throwable cause, long now) {
    long at = now > 0 && now != STORE_CLOCK ? now : Ticker.system().nowMicros();
    return step == Step.PEEK ? failureMode.peek(p, key, reason, cause, at) : failureMode.decide(p, key, permits, reason, cause, at);
  }

  /** Coalescing lanes still busy (for tests: zero proves that no lane is held after a fault). */
  int busyLanes() {
    return coalescer == null ? 0 : coalescer.busyLanes();
  }

  /** Tells the listener about a store call begun at {@code start} ({@link #nanoTime()}), unless the backend reports its own. */
  void reportStoreCall(Policy p, long start, Throwable error) {
    if (!reportsOwnStoreCalls) {
      listener.onStoreCall(p, nanoTime() - start, error);
    }
  }

  Decision finish(Decision d, String key) {
    listener.onDecision(d, key);
    return d;
  }

  /** Closes the backend: what it opened itself (a connection, an executor), never what it was given. */
  @Override public void close() {
    backend.close();
  }

  @Override public String toString() {
    return backend.describe();
  }

  /** The cause of a failed call; an interrupted caller gets its interrupt flag back. */
  static Throwable caught(Exception e) {
    if (e instanceof InterruptedException) {
      Thread.currentThread().interrupt();
    }
    return unwrap(e);
  }

  static Throwable unwrap(Throwable e) {
    while ((e instanceof ExecutionException || e instanceof CompletionException) && e.getCause() != null) {
      e = e.getCause();
    }
    return e;
  }

  /** Builds a {@link StoreRateLimiter} around a user's {@link Backend}: the shared {@link Settings}. */
  public static final class Builder extends Settings<Builder> {
    private final Backend<?> backend;

    private Builder(Policy policy, Backend<?> backend) {
      super(policy, DEFAULT_TIMEOUT);
      this.backend = backend;
      backend.capabilities().require(policy);
    }

    @Override protected Builder self() {
      return this;
    }

    public StoreRateLimiter build() {
      return pipeline(backend);
    }
  }

  /**
   * The settings every store-backed limiter shares: {@code timeout}, {@code failureMode},
   * {@code ticker}, {@code listener}, the ticket {@code issuer} and {@code maxBatch}. Fails fast on
   * bad values. A store's own builder extends it and ends in {@link #pipeline}.
   *
   * @param <B> the store's builder
   */
  public abstract static class Settings<B extends Settings<B>> {
    /** The limiter's default policy. */
    protected final Policy policy;
    private Duration timeout;
    private FailureMode failureMode = FailureMode.closed();
    private Ticker ticker;
    private RateLimitListener listener = RateLimitListener.NONE;
    private boolean includeKeys;
    private Ticket.Issuer issuer;
    private int maxBatch = MAX_BATCH;
    private RateLimitListener guarded;

    protected Settings(Policy policy, Duration defaultTimeout) {
      this.policy = Checks.notNull("policy", policy);
      this.timeout = defaultTimeout;
    }

    protected abstract B self();

    /** The deadline of every call, 1 ms..1 min (each backend says its default); a decision never waits longer. */
    public B timeout(Duration timeout) {
      this.timeout = Checks.timeout("timeout", timeout);
      return self();
    }

    /** What a decision does when the store cannot answer (default {@link FailureMode#closed()}). */
    public B failureMode(FailureMode failureMode) {
      this.failureMode = Checks.notNull("failureMode", failureMode);
      return self();
    }

    /**
     * Decide on this clock (epoch microseconds) instead of the store's own (where the store has
     * one). Readings must lie in 1..2^52 - 2^49 (until the year 2094); others are refused with
     * {@link Reason#INVALID_CLOCK}.
     */
    public B ticker(Ticker ticker) {
      this.ticker = Checks.notNull("ticker", ticker);
      return self();
    }

    /** Told about decisions, refusals, refunds and each store call; receives keys only when {@code includeKeys}. */
    public B listener(RateLimitListener listener, boolean includeKeys) {
      this.listener = Checks.notNull("listener", listener);
      this.includeKeys = includeKeys;
      this.guarded = null;
      return self();
    }

    /**
     * Issue and accept tickets with {@code issuer} instead of the limiter's own, so that limiters
     * sharing one store on purpose accept each other's tickets (the rate-limit service does, behind
     * its signed tickets). A ticket still changes its budget once: the store records it as spent.
     */
    public B issuer(Ticket.Issuer issuer) {
      this.issuer = Checks.notNull("issuer", issuer);
      return self();
    }

    /**
     * Request coalescing: acquires for one key that arrive while a store call for that key is in
     * flight go together in the next store call, at most {@code maxBatch} of them, each decided
     * exactly as it would be alone in that order. 1 turns coalescing off; the default is
     * {@value StoreRateLimiter#MAX_BATCH} on a backend that batches ({@link Capabilities#withBatches}).
     */
    public B maxBatch(int maxBatch) {
      this.maxBatch = Checks.range("maxBatch", maxBatch, 1, MAX_BATCH,
          "a batch is one store call, bounded so that no request waits behind a long one (1 turns coalescing off)");
      return self();
    }

    /**
     * The limiter of these settings around {@code backend}, which the store's builder made from
     * them. Closing the limiter closes the backend.
     */
    protected final StoreRateLimiter pipeline(Backend<?> backend) {
      return new StoreRateLimiter(this, backend);
    }

    /** The listener the limiter tells (guarded, keys only when opted in), for a backend that reports its own store calls. */
    protected final RateLimitListener listener() {
      if (guarded == null) {
        guarded = RateLimitListener.guarded(listener, includeKeys);
      }
      return guarded;
    }

    /** The supplied ticker, or null for the store's clock. */
    protected final Ticker suppliedTicker() {
      return ticker;
    }

    protected final Duration timeout() {
      return timeout;
    }

    protected final FailureMode failureMode() {
      return failureMode;
    }
  }
}
