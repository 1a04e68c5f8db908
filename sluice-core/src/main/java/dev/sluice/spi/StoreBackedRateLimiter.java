package dev.sluice.spi;

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
import dev.sluice.model.ReferenceModel;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;

/**
 * The one decision pipeline of every store-backed limiter (Redis, PostgreSQL, the versioned-store
 * engine), in the spirit of Bucket4j's proxy managers: a backend supplies only its atomic
 * {@link #step} against its store (one EVALSHA, one statement, one compare-and-set loop) and
 * translates the reply into a {@link StepResult}; everything else is decided here, once:
 *
 * <ul>
 *   <li>validation of keys, policies and permits ({@link Checks}), with the backend's own
 *       {@link #compile} rule for what it can run; per-call override policies compiled once
 *       (at most {@value #MAX_CACHED_PLANS} kept);
 *   <li>the clock: a supplied {@link Ticker} read once per call and refused outside 1..2^52 - 2^49 us as
 *       {@link Reason#INVALID_CLOCK}, or {@link #STORE_CLOCK} for a store that reads its own;
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
 *       has no effect; a settlement (a refund of the unused part, or an {@link Step#OVERRUN})
 *       follows the same rules;
 *   <li>listener events: one decision event per acquire (a peek charges nothing and is no decision,
 *       as on the memory tier), one store-call event per step, one refund event per refund;
 *   <li>request coalescing, for a backend that can decide a batch ({@link #stepBatch}): acquires
 *       for one budget (within one {@link #batchScope scope}, if the backend has one) that arrive
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
 * <p>This file is over 500 lines because it is the SPI a backend implements (each protected method
 * with its contract) and its public nested {@link Builder}; coalescing and the asynchronous decision
 * are in the package-private {@code Coalescer} and {@code AsyncDecision}.
 *
 * @param <P> what the backend compiles a policy into (a script and its arguments, a statement)
 */
public abstract class StoreBackedRateLimiter<P> implements RateLimiter {
  /** The {@code now} a step gets when the store reads its own clock. */
  public static final long STORE_CLOCK = 0;
  /** Most per-call override policies kept compiled; past it an override is compiled per call. */
  public static final int MAX_CACHED_PLANS = 256;
  /** The default and largest number of acquires one coalesced store call decides. */
  public static final int MAX_BATCH = 64;

  private static final System.Logger LOG = System.getLogger(StoreBackedRateLimiter.class.getName());

  /** What a step is asked to do. */
  public enum Step {
    /** Spend the permits if they fit. */
    ACQUIRE,
    /** Answer whether one permit fits, writing nothing. */
    PEEK,
    /** Give a ticket's permits back to the window or bucket of its stamp. */
    REFUND,
    /**
     * Charge a settlement's overrun ({@link dev.sluice.model.ReferenceModel#settle} with a positive
     * difference): {@code permits} is the actual cost minus the reservation, at least 1, and
     * {@code stamp} the ticket's. A settlement below the reservation is a {@link #REFUND} of the
     * difference. Either way one round trip, as an acquire.
     */
    OVERRUN
  }

  private final Policy policy;
  private final P defaultPlan;
  private final ConcurrentHashMap<Policy, P> plans = new ConcurrentHashMap<>();
  private final FailureMode failureMode;
  private final Ticker ticker;
  private final RateLimitListener listener;
  private final long timeoutNanos;
  private final Ticket.Issuer issuer;
  private final Coalescer<P> coalescer; // null: coalescing off

  /** {@code defaultPlan} is {@link #compile compiled} from the builder's policy by the backend's builder. */
  protected StoreBackedRateLimiter(Builder<?> b, P defaultPlan) {
    this.policy = b.policy;
    this.defaultPlan = defaultPlan;
    this.failureMode = b.failureMode;
    this.ticker = b.ticker;
    this.listener = RateLimitListener.guarded(b.listener, b.includeKeys);
    this.timeoutNanos = b.timeout.toNanos();
    this.issuer = b.issuer != null ? b.issuer : new Ticket.Issuer();
    this.coalescer = b.maxBatch > 1 && b.batches() ? new Coalescer<>(this, b.maxBatch) : null;
  }

  // ---------------------------------------------------------------------------------------------
  // What a backend supplies
  // ---------------------------------------------------------------------------------------------

  /** Compiles {@code policy} for this store; throws {@link IllegalArgumentException} naming the rule when the store cannot run it. */
  protected abstract P compile(Policy policy);

  /**
   * One atomic step against the store, finished by {@code deadlineNanos} ({@link System#nanoTime()}).
   * {@code now} is the supplied clock reading, or {@link #STORE_CLOCK}. {@code ticket} is the ticket a
   * {@link Step#REFUND} or {@link Step#OVERRUN} spends (null for acquires and peeks): the step applies
   * its {@code permits} under the ticket's {@link Ticket#stamp() stamp}, and <b>in the same atomic
   * operation</b> records the ticket's {@link Ticket#id() id} as spent for this budget, kept at least
   * until {@link dev.sluice.model.ReferenceModel#ticketExpiresAt} (swept with the state); a ticket
   * already recorded, or past that instant at {@code now}, changes nothing ({@code wrote} false).
   * So a step retried after an unknown outcome applies at most once. Throws for store trouble:
   * {@link StoreNotReachedException} when nothing reached the store, any other exception when the
   * outcome is unknown; an {@link IllegalArgumentException} is a programmer error and reaches the caller.
   */
  protected abstract StepResult step(P plan, Step step, String key, long permits, Ticket ticket, long now, long deadlineNanos)
      throws Exception;

  /**
   * {@link #step} without holding the calling thread, for acquires. The pipeline completes the
   * decision at the deadline itself and then cancels the returned future. The default runs
   * {@link #step} on the calling thread.
   */
  protected CompletableFuture<StepResult> stepAsync(P plan, Step step, String key, long permits, Ticket ticket, long now,
                                                    long deadlineNanos) {
    try {
      return CompletableFuture.completedFuture(this.step(plan, step, key, permits, ticket, now, deadlineNanos));
    } catch (Exception e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * Decides {@code permits.length} acquires for {@code key} in one atomic store call, in order, at
   * one instant: each exactly as {@link #step} would decide it after the ones before it. Returns one
   * result per request (a failure such as corrupt state is every request's result). Only called
   * when the backend's builder says it {@link Builder#batches() batches} and {@link #batches}
   * accepts the plan. {@code scope} is every request's {@link #batchScope} (requests of different
   * scopes never share a batch); a batch may run on any thread, so a step that depends on the
   * caller's context reads it from {@code scope}, never from the thread. Throws as {@link #step} does.
   */
  protected StepResult[] stepBatch(P plan, String scope, String key, long[] permits, long now, long deadlineNanos)
      throws Exception {
    throw new UnsupportedOperationException("this backend decides no batches");
  }

  /** {@link #stepBatch} without holding the calling thread; the default runs it on the calling thread. */
  protected CompletableFuture<StepResult[]> stepBatchAsync(P plan, String scope, String key, long[] permits, long now,
                                                           long deadlineNanos) {
    try {
      return CompletableFuture.completedFuture(stepBatch(plan, scope, key, permits, now, deadlineNanos));
    } catch (Exception e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * True when {@link #stepAsync} and {@link #stepBatchAsync} hold no thread (a native asynchronous
   * client, like Redis's). Coalesced batches then go to the store asynchronously and every waiting
   * request keeps its own deadline; otherwise the oldest waiting caller runs the batch on its own
   * thread, and only synchronous acquires are coalesced. False by default.
   */
  protected boolean stepsAsync() {
    return false;
  }

  /** Whether {@link #stepBatch} can run {@code plan} (a backend may batch some algorithms only). */
  protected boolean batches(P plan) {
    return true;
  }

  /**
   * What, besides the policy and the key, requests must share to go in one batch: the part of a
   * step that comes from the caller's context (PostgreSQL's tenant in tenant mode), read on the
   * caller's thread as an acquire enters coalescing, and handed to {@link #stepBatch} as its
   * {@code scope}. The default, null, is no scope. A request whose scope cannot be read (this method
   * throws) is not coalesced: its own {@link #step} runs, which must meet the same trouble and
   * answer as it always does. A request that leads its lane still runs its own {@link #step}, on its
   * own thread, as an uncoalesced request.
   */
  protected String batchScope(P plan) {
    return null;
  }

  /** Deletes {@code key}'s state under {@code plan}'s policy. */
  protected abstract void delete(P plan, String key, long deadlineNanos) throws Exception;

  /**
   * {@link Reason#TIMEOUT} or {@link Reason#STORE_UNAVAILABLE} for a store exception; backends add their own timeouts. A
   * call never sent because its deadline passed first (a {@link StoreNotReachedException} caused by a
   * {@link TimeoutException}) is a {@link Reason#TIMEOUT}, and stays not-reached for a refund.
   */
  protected Reason classify(Throwable error) {
    return error instanceof StoreTimeoutException || error instanceof TimeoutException
        || error instanceof StoreNotReachedException && error.getCause() instanceof TimeoutException
        ? Reason.TIMEOUT : Reason.STORE_UNAVAILABLE;
  }

  /** The clock deadlines are measured on: {@link System#nanoTime()}, or a test's fake. */
  protected long nanoTime() {
    return System.nanoTime();
  }

  /** True for a backend whose step reports each of its store calls to {@link #listener()} itself. */
  protected boolean reportsOwnStoreCalls() {
    return false;
  }

  // ---------------------------------------------------------------------------------------------
  // What a backend may read
  // ---------------------------------------------------------------------------------------------

  /** The supplied clock, or null when the store reads its own. */
  protected final Ticker suppliedTicker() {
    return ticker;
  }

  /** The guarded listener (keys only when opted in). */
  protected final RateLimitListener listener() {
    return listener;
  }

  protected final long timeoutNanos() {
    return timeoutNanos;
  }

  /** Whether acquires are coalesced (the builder's {@code maxBatch} above 1, on a backend that batches). */
  protected final boolean coalesces() {
    return coalescer != null;
  }

  protected final FailureMode failureMode() {
    return failureMode;
  }

  /** The reading a step gets: the supplied clock's, or {@link #STORE_CLOCK}. */
  protected final long clock() {
    return ticker != null ? ticker.nowMicros() : STORE_CLOCK;
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
    P plan = plan(p);
    Checks.permits(permits, p.limit(), p.name());
    long now = clock();
    if (!plausible(now)) {
      return CompletableFuture.completedFuture(finish(failed(p, Step.ACQUIRE, key, permits, Reason.INVALID_CLOCK, null, now), key));
    }
    Coalescer.LaneId lane = coalescer != null && stepsAsync() && batches(plan) ? coalescer.lane(plan, p, key) : null;
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
    P plan = plan(p);
    long start = nanoTime();
    Throwable error = null;
    try {
      delete(plan, key, start + timeoutNanos);
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

  /** {@link #tryAcquire} at {@code nowMicros} (or {@link #STORE_CLOCK}), for a backend that lets callers supply the instant. */
  protected final Decision acquireAt(String key, long permits, Policy p, long nowMicros) {
    Checks.key(key);
    P plan = plan(p);
    Checks.permits(permits, p.limit(), p.name());
    Coalescer.LaneId lane = coalescer != null && plausible(nowMicros) && batches(plan) ? coalescer.lane(plan, p, key) : null;
    if (lane != null) {
      return finish(coalescer.acquire(plan, lane, permits, nowMicros), key);
    }
    return finish(decide(plan, p, Step.ACQUIRE, key, permits, nowMicros), key);
  }

  /** {@link #peek} at {@code nowMicros} (or {@link #STORE_CLOCK}). */
  protected final Decision peekAtTime(String key, Policy p, long nowMicros) {
    Checks.key(key);
    P plan = plan(p);
    // Not finish(): a peek is no decision, so health probes and dashboards never inflate the counts.
    return decide(plan, p, Step.PEEK, key, 1, nowMicros);
  }

  /** {@link #refund} at {@code nowMicros} (or {@link #STORE_CLOCK}). */
  protected final Refund refundAtTime(Ticket ticket, long nowMicros) {
    if (ticket == null) {
      return Refund.NO_EFFECT;
    }
    Policy p = ticket.policy();
    if (!issuer.issued(ticket)) {
      return report(p, failureMode.refundForeign(ticket));
    }
    long permits = Math.min(ticket.permits(), p.limit()); // more than the limit gives back the same: all of it
    if (permits < 1 || !issuer.claim(ticket)) {
      return report(p, Refund.NO_EFFECT);
    }
    return report(p, spend(ticket, Step.REFUND, permits, nowMicros));
  }

  @Override public final Settlement settle(Ticket ticket, long actualPermits) {
    return settleAtTime(ticket, actualPermits, clock());
  }

  /**
   * {@link #settle} at {@code nowMicros} (or {@link #STORE_CLOCK}): one step, a {@link Step#REFUND}
   * of the unused part or an {@link Step#OVERRUN} of the excess, under the same once-only rules as a
   * refund (a settlement that may have reached the store stays spent; one that certainly did not
   * can be retried).
   */
  protected final Settlement settleAtTime(Ticket ticket, long actualPermits, long nowMicros) {
    if (ticket == null) {
      return Settlement.NO_EFFECT;
    }
    long delta = Checks.settlementDelta(ticket, actualPermits);
    Policy p = ticket.policy();
    Settlement r;
    if (!issuer.issued(ticket)) {
      r = failureMode.settleForeign(ticket, actualPermits);
    } else if (!issuer.claim(ticket) || delta == 0) {
      r = Settlement.NO_EFFECT;
    } else {
      r = Settlement.of(delta < 0 ? spend(ticket, Step.REFUND, -delta, nowMicros) : spend(ticket, Step.OVERRUN, delta, nowMicros));
    }
    listener.onSettle(p, r);
    return r;
  }

  /**
   * One refund or settlement step for a claimed ticket. The claim is released whenever the ticket
   * may be retried: nothing was applied for sure ({@link Refund#FAILED}), or the outcome is unknown
   * ({@link Refund#UNKNOWN}: the store's spent record, written in the step itself, keeps a retry from
   * applying twice).
   */
  private Refund spend(Ticket ticket, Step step, long permits, long now) {
    boolean settling = step == Step.OVERRUN || permits != Math.min(ticket.permits(), ticket.policy().limit());
    Policy p = ticket.policy();
    if (!plausible(now)) {
      issuer.release(ticket);
      return Refund.FAILED;
    }
    if (now != STORE_CLOCK && !ReferenceModel.ticketLive(p.algorithm(), ticket.stamp(), now)) {
      return Refund.NO_EFFECT; // its life ended: no store records it any longer, so nothing may apply it
    }
    P plan = plan(p);
    long start = nanoTime();
    Throwable error = null;
    Refund result;
    try {
      StepResult r = step(plan, step, ticket.key(), permits, ticket, now, start + timeoutNanos);
      if (r.failure() != null) {
        issuer.release(ticket); // corrupt state, clock or contention: the step wrote nothing
        result = Refund.FAILED;
      } else {
        result = r.wrote() ? Refund.APPLIED : Refund.NO_EFFECT;
      }
    } catch (Exception e) {
      error = caught(e);
      issuer.release(ticket); // a retry is the one application or no effect: the store keeps the spent record
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

  private P plan(Policy p) {
    Checks.notNull("policy", p);
    if (p == policy || p.equals(policy)) {
      return defaultPlan;
    }
    P cached = plans.get(p);
    if (cached == null) {
      cached = compile(p);
      if (plans.size() < MAX_CACHED_PLANS) {
        plans.putIfAbsent(p, cached);
      }
    }
    return cached;
  }

  /** The store's own clock, or a supplied reading in 1..2^52 - 2^49 us (the year 2094). */
  private boolean plausible(long now) {
    return ticker == null ? now == STORE_CLOCK : Checks.validClock(now);
  }

  Decision decide(P plan, Policy p, Step step, String key, long permits, long now) {
    if (!plausible(now)) {
      return failed(p, step, key, permits, Reason.INVALID_CLOCK, null, now);
    }
    long start = nanoTime();
    StepResult r = null;
    Throwable error = null;
    try {
      r = step(plan, step, key, permits, null, now, start + timeoutNanos);
    } catch (IllegalArgumentException e) {
      throw e; // a programmer error the backend found (a blank tenant, say): never a store failure
    } catch (Exception e) {
      error = caught(e);
    }
    reportStoreCall(p, start, error);
    return r != null ? toDecision(r, p, step, key, permits, now) : failed(p, step, key, permits, classify(error), error, now);
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
    if (!reportsOwnStoreCalls()) {
      listener.onStoreCall(p, nanoTime() - start, error);
    }
  }

  private Refund report(Policy p, Refund r) {
    listener.onRefund(p, r);
    return r;
  }

  Decision finish(Decision d, String key) {
    listener.onDecision(d, key);
    return d;
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

  /**
   * The settings every store-backed limiter shares: {@code timeout}, {@code failureMode},
   * {@code ticker}, {@code listener} and the ticket {@code issuer}. Fails fast on bad values.
   *
   * @param <B> the backend's builder
   */
  public abstract static class Builder<B extends Builder<B>> {
    /** The limiter's default policy. */
    protected final Policy policy;
    private Duration timeout;
    private FailureMode failureMode = FailureMode.closed();
    private Ticker ticker;
    private RateLimitListener listener = RateLimitListener.NONE;
    private boolean includeKeys;
    private Ticket.Issuer issuer;
    private int maxBatch = MAX_BATCH;

    protected Builder(Policy policy, Duration defaultTimeout) {
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
     * {@value StoreBackedRateLimiter#MAX_BATCH} on a backend that {@link #batches() batches}.
     */
    public B maxBatch(int maxBatch) {
      this.maxBatch = Checks.range("maxBatch", maxBatch, 1, MAX_BATCH,
          "a batch is one store call, bounded so that no request waits behind a long one (1 turns coalescing off)");
      return self();
    }

    /** Whether the backend decides batches ({@link StoreBackedRateLimiter#stepBatch}); false by default. */
    protected boolean batches() {
      return false;
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
