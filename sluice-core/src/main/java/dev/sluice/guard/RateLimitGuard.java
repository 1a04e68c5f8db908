package dev.sluice.guard;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Ticker;
import dev.sluice.internal.Checks;
import java.util.concurrent.Callable;
import java.util.function.Supplier;

/**
 * Guards any operation with a rate limit: {@link #check} returns when the limiter allows, throws
 * {@link RateLimitExceededException} when it refuses, and <b>fails open</b> when the store cannot
 * decide: the call proceeds and {@link StoreErrorHandler#onStoreError} is told.
 *
 * <p>Failing open is the point of a guard: an abuse throttle on a login or a tool call must never
 * lock an account out because of infrastructure. It does so whatever the limiter's own
 * {@link dev.sluice.FailureMode} is (a closed refusal with a failure reason becomes an allowed call),
 * except for the reasons every failure mode refuses ({@link FailureMode#alwaysClosed}): corrupt
 * state and an invalid clock (a state that must not be trusted) and contention (compare-and-set
 * retries run out on a key hammered hard enough; letting that flood through would open the guard
 * exactly when it is attacked).
 *
 * <pre>{@code
 * RateLimitGuard guard = RateLimitGuard.builder(limiter)
 *     .onStoreError(e -> alerts.page("rate limiter down: " + e.reason()))
 *     .build();
 * guard.check("account:" + accountId);              // throws RateLimitExceededException when over
 * Result r = guard.call("account:" + accountId, () -> expensiveOperation());
 * }</pre>
 *
 * Thread-safe; immutable once built.
 */
public final class RateLimitGuard {
  private static final System.Logger LOG = System.getLogger(RateLimitGuard.class.getName());

  private final RateLimiter limiter;
  private final Policy policy;
  private final StoreErrorHandler onStoreError;

  private RateLimitGuard(Builder b) {
    this.limiter = b.limiter;
    this.policy = b.policy != null ? b.policy : b.limiter.policy();
    this.onStoreError = b.onStoreError;
  }

  public static Builder builder(RateLimiter limiter) {
    return new Builder(Checks.notNull("limiter", limiter));
  }

  /** The policy this guard checks. */
  public Policy policy() {
    return policy;
  }

  /**
   * Spends one permit for {@code key}. Returns the allowed decision; when the guard failed open it
   * returns an allowed decision with the failure's {@link Decision#reason()}, {@link Path#FAILURE_MODE}
   * and no ticket. Throws {@link RateLimitExceededException} when
   * refused. Throws {@link IllegalArgumentException} for a bad key.
   */
  public Decision check(String key) {
    return check(key, 1);
  }

  /** {@link #check(String)} for {@code permits} permits. */
  public Decision check(String key, long permits) {
    Decision d;
    try {
      d = limiter.tryAcquire(key, permits, policy);
    } catch (IllegalArgumentException e) {
      throw e;
    } catch (RuntimeException e) {
      // A limiter must not throw for store trouble; one that does is treated as a store failure.
      report(new StoreError(policy, key, Reason.STORE_UNAVAILABLE, null, e));
      long now = Ticker.system().nowMicros();
      return Decision.builder(policy).allowed(Reason.STORE_UNAVAILABLE).path(Path.FAILURE_MODE).resetAtMicros(now).build();
    }
    if (d.allowed()) {
      if (d.reason().isFailure()) {
        // The limiter's own open mode let it through; still say so to our handler.
        report(new StoreError(policy, key, d.reason(), d, null));
      }
      return d;
    }
    Reason reason = d.reason();
    if (reason.isFailure() && !FailureMode.alwaysClosed(reason)) {
      report(new StoreError(policy, key, reason, d, null));
      return Decision.builder(d.policy()).allowed(reason).path(Path.FAILURE_MODE).resetAtMicros(d.resetAtMicros()).build();
    }
    throw new RateLimitExceededException(d);
  }

  /** Checks {@code key}, then runs {@code operation} and returns its result. */
  public <T> T call(String key, Callable<T> operation) throws Exception {
    check(key);
    return operation.call();
  }

  /** Checks {@code key}, then gets {@code operation}'s result; for operations that throw no checked exception. */
  public <T> T get(String key, Supplier<T> operation) {
    check(key);
    return operation.get();
  }

  /** Checks {@code key}, then runs {@code operation}. */
  public void run(String key, Runnable operation) {
    check(key);
    operation.run();
  }

  private void report(StoreError error) {
    try {
      onStoreError.onStoreError(error);
    } catch (Throwable t) {
      LOG.log(System.Logger.Level.WARNING, "onStoreError handler threw; ignored", t);
    }
  }

  /** Builds a {@link RateLimitGuard}. */
  public static final class Builder {
    private final RateLimiter limiter;
    private Policy policy;
    private StoreErrorHandler onStoreError = StoreErrorHandler.LOG;

    private Builder(RateLimiter limiter) {
      this.limiter = limiter;
    }

    /** Checks under {@code policy} (a per-call override of the limiter's default policy). */
    public Builder policy(Policy policy) {
      this.policy = Checks.notNull("policy", policy);
      return this;
    }

    /** Told each time the guard fails open. Default: {@link StoreErrorHandler#LOG}. */
    public Builder onStoreError(StoreErrorHandler handler) {
      this.onStoreError = Checks.notNull("onStoreError", handler);
      return this;
    }

    public RateLimitGuard build() {
      return new RateLimitGuard(this);
    }
  }
}
