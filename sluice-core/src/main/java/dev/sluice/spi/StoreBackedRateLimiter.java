package dev.sluice.spi;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.internal.Checks;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BiConsumer;

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
 *   <li>the clock: a supplied {@link Ticker} read once per call and refused outside (0, 2^52] us as
 *       {@link Reason#INVALID_CLOCK}, or {@link #STORE_CLOCK} for a store that reads its own;
 *   <li>the deadline of every call ({@code timeout}), also on the asynchronous path, where a timer
 *       completes the decision and cancels the store call;
 *   <li>the one mapping from a {@link StepResult} or a store exception to a {@link Decision}, and
 *       the {@link FailureMode} for every failure (closed, open or fallback, each with its
 *       configured retry), peeks and resets included;
 *   <li>tickets: issued by this limiter's {@link Ticket.Issuer}, refunded exactly once, a foreign
 *       ticket routed to the fallback (whose own it may be) or {@link Refund#NO_EFFECT}; a refund that
 *       may have reached the store stays spent, one that certainly did not
 *       ({@link StoreNotReachedException}, or a step that wrote nothing) can be retried;
 *   <li>listener events: one decision event per acquire (a peek charges nothing and is no decision,
 *       as on the memory tier), one store-call event per step, one refund event per refund.
 * </ul>
 * A budget is its policy's name and the key: a backend keys its state by those two alone, so a
 * per-call override with the same name and other numbers applies them to the existing state.
 *
 * @param <P> what the backend compiles a policy into (a script and its arguments, a statement)
 */
public abstract class StoreBackedRateLimiter<P> implements RateLimiter {
  /** The {@code now} a step gets when the store reads its own clock. */
  public static final long STORE_CLOCK = 0;
  /** Most per-call override policies kept compiled; past it an override is compiled per call. */
  public static final int MAX_CACHED_PLANS = 256;

  private static final System.Logger LOG = System.getLogger(StoreBackedRateLimiter.class.getName());
  private static final ScheduledThreadPoolExecutor DEADLINES = deadlineTimer();

  /** What a step is asked to do. */
  public enum Step {
    /** Spend the permits if they fit. */
    ACQUIRE,
    /** Answer whether one permit fits, writing nothing. */
    PEEK,
    /** Give a ticket's permits back to the window or bucket of its stamp. */
    REFUND
  }

  private final Policy policy;
  private final P defaultPlan;
  private final ConcurrentHashMap<Policy, P> plans = new ConcurrentHashMap<>();
  private final FailureMode failureMode;
  private final Ticker ticker;
  private final RateLimitListener listener;
  private final long timeoutNanos;
  private final Ticket.Issuer issuer;

  /** {@code defaultPlan} is {@link #compile compiled} from the builder's policy by the backend's builder. */
  protected StoreBackedRateLimiter(Builder<?> b, P defaultPlan) {
    this.policy = b.policy;
    this.defaultPlan = defaultPlan;
    this.failureMode = b.failureMode;
    this.ticker = b.ticker;
    this.listener = RateLimitListener.guarded(b.listener, b.includeKeys);
    this.timeoutNanos = b.timeout.toNanos();
    this.issuer = b.issuer != null ? b.issuer : new Ticket.Issuer();
  }

  // ---------------------------------------------------------------------------------------------
  // What a backend supplies
  // ---------------------------------------------------------------------------------------------

  /** Compiles {@code policy} for this store; throws {@link IllegalArgumentException} naming the rule when the store cannot run it. */
  protected abstract P compile(Policy policy);

  /**
   * One atomic step against the store, finished by {@code deadlineNanos} ({@link System#nanoTime()}).
   * {@code now} is the supplied clock reading, or {@link #STORE_CLOCK}. {@code stamp} is the ticket's
   * (refunds). Throws for store trouble: {@link StoreNotReachedException} when nothing reached the
   * store, any other exception when the outcome is unknown; an {@link IllegalArgumentException} is a
   * programmer error and reaches the caller.
   */
  protected abstract StepResult step(P plan, Step step, String key, long permits, long stamp, long now, long deadlineNanos)
      throws Exception;

  /**
   * {@link #step} without holding the calling thread, for acquires. The pipeline completes the
   * decision at the deadline itself and then cancels the returned future. The default runs
   * {@link #step} on the calling thread.
   */
  protected CompletableFuture<StepResult> stepAsync(P plan, Step step, String key, long permits, long stamp, long now,
                                                    long deadlineNanos) {
    try {
      return CompletableFuture.completedFuture(this.step(plan, step, key, permits, stamp, now, deadlineNanos));
    } catch (Exception e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** Deletes {@code key}'s state under {@code plan}'s policy. */
  protected abstract void delete(P plan, String key, long deadlineNanos) throws Exception;

  /** {@link Reason#TIMEOUT} or {@link Reason#STORE_UNAVAILABLE} for a store exception; backends add their own timeouts. */
  protected Reason classify(Throwable error) {
    return error instanceof StoreTimeoutException || error instanceof TimeoutException ? Reason.TIMEOUT : Reason.STORE_UNAVAILABLE;
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
    return new AsyncDecision(plan, p, key, permits, now).start();
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
    if (!reportsOwnStoreCalls()) {
      listener.onStoreCall(p, nanoTime() - start, error);
    }
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
    P plan = plan(p);
    long permits = Math.min(ticket.permits(), p.limit()); // more than the limit gives back the same: all of it
    if (permits < 1 || !issuer.claim(ticket)) {
      return report(p, Refund.NO_EFFECT);
    }
    long now = nowMicros;
    if (!plausible(now)) {
      issuer.release(ticket);
      return report(p, Refund.FAILED);
    }
    long start = nanoTime();
    Throwable error = null;
    Refund result;
    try {
      StepResult r = step(plan, Step.REFUND, ticket.key(), permits, ticket.stamp(), now, start + timeoutNanos);
      if (r.failure() != null) {
        issuer.release(ticket); // corrupt state, clock or contention: the step wrote nothing
        result = Refund.FAILED;
      } else {
        result = r.wrote() ? Refund.APPLIED : Refund.NO_EFFECT;
      }
    } catch (Exception e) {
      error = caught(e);
      if (error instanceof StoreNotReachedException) {
        issuer.release(ticket); // nothing was sent: the ticket stays usable
      } // else the refund may have run: keep the ticket spent, so a retry can never give twice
      result = Refund.FAILED;
    }
    if (!reportsOwnStoreCalls()) {
      listener.onStoreCall(p, nanoTime() - start, error);
    }
    if (error != null) {
      LOG.log(System.Logger.Level.WARNING, "refund for policy '" + p.name() + "' failed; the limiter stays stricter: " + error);
    }
    return report(p, result);
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

  /** The store's own clock, or a supplied reading in (0, 2^52] us (the year 2112). */
  private boolean plausible(long now) {
    return ticker == null ? now == STORE_CLOCK : now > 0 && now <= Checks.MAX_EXACT;
  }

  private Decision decide(P plan, Policy p, Step step, String key, long permits, long now) {
    if (!plausible(now)) {
      return failed(p, step, key, permits, Reason.INVALID_CLOCK, null, now);
    }
    long start = nanoTime();
    StepResult r = null;
    Throwable error = null;
    try {
      r = step(plan, step, key, permits, 0, now, start + timeoutNanos);
    } catch (IllegalArgumentException e) {
      throw e; // a programmer error the backend found (a blank tenant, say): never a store failure
    } catch (Exception e) {
      error = caught(e);
    }
    if (!reportsOwnStoreCalls()) {
      listener.onStoreCall(p, nanoTime() - start, error);
    }
    return r != null ? toDecision(r, p, step, key, permits, now) : failed(p, step, key, permits, classify(error), error, now);
  }

  /** The one mapping from what a store answered to a decision. */
  private Decision toDecision(StepResult r, Policy p, Step step, String key, long permits, long now) {
    if (r.failure() != null) {
      return failed(p, step, key, permits, r.failure(), new StoreException(r.detail()), now);
    }
    Policy by = r.decidedBy() != null ? r.decidedBy() : p;
    if (r.allowed()) {
      return Decision.allowed(by, r.remaining(), r.resetAt(), step == Step.ACQUIRE ? issuer.issue(by, key, permits, r.stamp()) : null);
    }
    return Decision.refused(by, Reason.LIMIT_EXCEEDED, r.remaining(), r.resetAt(), r.retryAfter());
  }

  private Decision failed(Policy p, Step step, String key, long permits, Reason reason, Throwable cause, long now) {
    long at = now > 0 && now != STORE_CLOCK ? now : Ticker.system().nowMicros();
    return step == Step.PEEK ? failureMode.peek(p, key, reason, cause, at) : failureMode.decide(p, key, permits, reason, cause, at);
  }

  private Refund report(Policy p, Refund r) {
    listener.onRefund(p, r);
    return r;
  }

  private Decision finish(Decision d, String key) {
    listener.onDecision(d, key);
    return d;
  }

  /** The cause of a failed call; an interrupted caller gets its interrupt flag back. */
  private static Throwable caught(Exception e) {
    if (e instanceof InterruptedException) {
      Thread.currentThread().interrupt();
    }
    return unwrap(e);
  }

  private static Throwable unwrap(Throwable e) {
    while ((e instanceof ExecutionException || e instanceof CompletionException) && e.getCause() != null) {
      e = e.getCause();
    }
    return e;
  }

  private static ScheduledThreadPoolExecutor deadlineTimer() {
    ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1, r -> {
      Thread th = new Thread(r, "sluice-deadline");
      th.setDaemon(true);
      return th;
    });
    t.setRemoveOnCancelPolicy(true);
    return t;
  }

  /**
   * One asynchronous decision: the backend's step racing a deadline timer. Whichever settles first
   * decides; no thread waits. The losing side only cancels.
   */
  private final class AsyncDecision extends CompletableFuture<Decision> implements Runnable, BiConsumer<StepResult, Throwable> {
    private final P plan;
    private final Policy p;
    private final String key;
    private final long permits;
    private final long now;
    private final AtomicBoolean settled = new AtomicBoolean();
    private final long start = nanoTime();
    private volatile ScheduledFuture<?> timer;
    private volatile CompletableFuture<StepResult> inflight;

    AsyncDecision(P plan, Policy p, String key, long permits, long now) {
      this.plan = plan;
      this.p = p;
      this.key = key;
      this.permits = permits;
      this.now = now;
    }

    AsyncDecision start() {
      timer = DEADLINES.schedule(this, timeoutNanos, TimeUnit.NANOSECONDS);
      CompletableFuture<StepResult> f;
      try {
        f = stepAsync(plan, Step.ACQUIRE, key, permits, 0, now, start + timeoutNanos);
      } catch (IllegalArgumentException e) {
        timer.cancel(false);
        throw e; // a programmer error, thrown at once as from the sync path
      } catch (RuntimeException e) {
        accept(null, e); // a backend closing under us: a failure decision, never a throw
        return this;
      }
      inflight = f;
      f.whenComplete(this);
      return this;
    }

    @Override public void accept(StepResult r, Throwable e) {
      if (!settled.compareAndSet(false, true)) {
        return;
      }
      ScheduledFuture<?> t = timer;
      if (t != null) {
        t.cancel(false);
      }
      Throwable error = e == null ? null : unwrap(e);
      if (!reportsOwnStoreCalls()) {
        listener.onStoreCall(p, nanoTime() - start, error);
      }
      Decision d = r != null ? toDecision(r, p, Step.ACQUIRE, key, permits, now)
          : failed(p, Step.ACQUIRE, key, permits, classify(error), error, now);
      complete(finish(d, key));
    }

    /** The deadline passed first. */
    @Override public void run() {
      if (!settled.compareAndSet(false, true)) {
        return;
      }
      CompletableFuture<StepResult> f = inflight;
      if (f != null) {
        f.cancel(false);
      }
      TimeoutException te = new TimeoutException("store call deadline of " + Duration.ofNanos(timeoutNanos) + " passed");
      if (!reportsOwnStoreCalls()) {
        listener.onStoreCall(p, nanoTime() - start, te);
      }
      complete(finish(failed(p, Step.ACQUIRE, key, permits, Reason.TIMEOUT, te, now), key));
    }
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
     * one). Readings must lie in (0, 2^52] (until the year 2112); others are refused with
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
     * its signed tickets). A ticket still refunds once per ticket object.
     */
    public B issuer(Ticket.Issuer issuer) {
      this.issuer = Checks.notNull("issuer", issuer);
      return self();
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
