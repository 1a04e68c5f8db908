package dev.sluice.guard;

import dev.sluice.Decision;
import dev.sluice.Reason;
import java.time.Duration;

/**
 * Thrown by {@link RateLimitGuard} when the limiter refused: the caller is over its limit (or, for
 * {@link Reason#CORRUPT_STATE} and {@link Reason#INVALID_CLOCK}, the limiter cannot trust its
 * state; or the guard's failure mode refused a check the limiter could not decide). Carries the
 * {@link #retryAfter()} to tell the caller. The message names the policy, never
 * the key (keys are often personal data).
 *
 * <p>Unchecked, so it crosses lambdas and frameworks that do not declare checked exceptions. The
 * stack trace is not filled in: a refusal is an expected outcome under load, not a bug to debug, and
 * a flood of them must stay cheap.
 */
public final class RateLimitExceededException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final transient Decision decision;
  private final String policyName;
  private final Reason reason;
  private final long retryAfterMicros;

  public RateLimitExceededException(Decision decision) {
    super(message(decision), null, false, false);
    this.decision = decision;
    this.policyName = decision.policy().name();
    this.reason = decision.reason();
    this.retryAfterMicros = decision.retryAfterMicros();
  }

  private static String message(Decision d) {
    return "rate limit of policy '" + d.policy().name() + "' exceeded (" + d.reason() + "); retry after "
        + retryAfterSeconds(d.retryAfterMicros()) + " s";
  }

  /** The refused decision (null after deserialization). */
  public Decision decision() { return decision; }

  public String policyName() { return policyName; }

  public Reason reason() { return reason; }

  /** How long to wait before trying again: the refusal's exact {@link Decision#retryAfter()}, never zero. */
  public Duration retryAfter() { return Duration.ofNanos(retryAfterMicros * 1_000L); }

  /** {@link #retryAfter()} in whole seconds, rounded up, at least 1: the value of an HTTP {@code Retry-After}. */
  public long retryAfterSeconds() { return retryAfterSeconds(retryAfterMicros); }

  static long retryAfterSeconds(long micros) {
    return Math.max(1, Math.floorDiv(micros + 999_999L, 1_000_000L));
  }
}
