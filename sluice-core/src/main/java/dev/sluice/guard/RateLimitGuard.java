package dev.sluice.guard;

import dev.sluice.ClockedRateLimiter;
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
 * {@link RateLimitExceededException} when it refuses, and when the limiter could not decide (its
 * store failed) the guard's {@link FailureMode} decides, applied around the limiter: by default
 * {@link FailureMode#open open}, so the call proceeds and the failure is logged.
 *
 * <p>Failing open is the point of a guard: an abuse throttle on a login or a tool call must never
 * lock an account out because of infrastructure. The guard's mode decides whatever the limiter's own
 * {@link FailureMode} is (a closed refusal with a failure reason becomes an allowed call under the
 * guard's open mode), except for the reasons every failure mode refuses
 * ({@link FailureMode#alwaysClosed}): corrupt state and an invalid clock (a state that must not be
 * trusted) and contention (compare-and-set retries run out on a key hammered hard enough; letting that
 * flood through would open the guard exactly when it is attacked), which the limiter's refusal answers.
 *
 * <pre>{@code
 * RateLimitGuard guard = RateLimitGuard.builder(limiter)
 *     .failureMode(FailureMode.open((policy, reason, cause) -> alerts.page("rate limiter down: " + reason)))
 *     .build();
 * guard.check("account:" + accountId);              // throws RateLimitExceededException when over
 * Result r = guard.call("account:" + accountId, () -> expensiveOperation());
 * }</pre>
 *
 * Thread-safe; immutable once built.
 */
public final class RateLimitGuard {
  private static final System.Logger LOG = System.getLogger(RateLimitGuard.class.getName());
  /** The guard's default: fail open, each failure logged at WARNING. */
  private static final FailureMode FAIL_OPEN = FailureMode.open((policy, reason, cause) -> LOG.log(System.Logger.Level.WARNING,
      "rate limiter could not decide for policy '" + policy.name() + "' (" + reason + "); allowed the call (guard fails open)", cause));

  private final RateLimiter limiter;
  private final Policy policy;
  private final FailureMode failureMode;

  private RateLimitGuard(Builder b) {
    this.limiter = b.limiter;
    this.policy = b.policy != null ? b.policy : b.limiter.policy();
    this.failureMode = b.failureMode;
  }

  public static Builder builder(RateLimiter limiter) {
    return new Builder(Checks.notNull("limiter", limiter));
  }

  /** The policy this guard checks. */
  public Policy policy() {
    return policy;
  }

  /**
   * Spends one permit for {@code key}. Returns the allowed decision; when the limiter could not decide
   * and the guard's failure mode allowed the call (open, the default), an allowed decision with the
   * failure's {@link Decision#reason()}, {@link Path#FAILURE_MODE} and no ticket. Throws
   * {@link RateLimitExceededException} when refused (by the limiter, or by the guard's failure mode).
   * Throws {@link IllegalArgumentException} for a bad key.
   */
  public Decision check(String key) {
    return check(key, 1);
  }

  /** {@link #check(String)} for {@code permits} permits. */
  public Decision check(String key, long permits) {
    Decision d;
    try {
      d = limiter.tryAcquire(key, permits, policy);
      Reason reason = d.reason();
      if (reason.isFailure() && !FailureMode.alwaysClosed(reason)) {
        // The limiter's own failure mode answered: the guard's decides instead.
        d = failureMode.decide(policy, key, permits, reason, null, now());
      }
    } catch (IllegalArgumentException e) {
      throw e;
    } catch (RuntimeException e) {
      // A limiter must not throw for store trouble; one that does could not decide.
      d = failureMode.decide(policy, key, permits, Reason.STORE_UNAVAILABLE, e, now());
    }
    if (d.allowed()) {
      return d;
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

  /** The guard's clock for a decision its failure mode makes: the limiter's when it has one. */
  private long now() {
    return (limiter instanceof ClockedRateLimiter c ? c.ticker() : Ticker.system()).nowMicros();
  }

  /** Builds a {@link RateLimitGuard}. */
  public static final class Builder {
    private final RateLimiter limiter;
    private Policy policy;
    private FailureMode failureMode = FAIL_OPEN;

    private Builder(RateLimiter limiter) {
      this.limiter = limiter;
    }

    /** Checks under {@code policy} (a per-call override of the limiter's default policy). */
    public Builder policy(Policy policy) {
      this.policy = Checks.notNull("policy", policy);
      return this;
    }

    /**
     * What a check decides when the limiter could not: {@link FailureMode#open(FailureMode.FailureAlert)}
     * with your alert (the default logs each failure at WARNING), {@link FailureMode#closed()} to refuse
     * ({@link RateLimitExceededException} with the failure's reason), or
     * {@link FailureMode#fallback(RateLimiter)} to decide with a local limiter.
     */
    public Builder failureMode(FailureMode failureMode) {
      this.failureMode = Checks.notNull("failureMode", failureMode);
      return this;
    }

    public RateLimitGuard build() {
      return new RateLimitGuard(this);
    }
  }
}
