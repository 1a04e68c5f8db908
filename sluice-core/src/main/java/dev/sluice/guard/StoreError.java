package dev.sluice.guard;

import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.Reason;

/**
 * What {@link RateLimitGuard} tells its {@link StoreErrorHandler} when it let a call through because
 * the limiter could not decide.
 *
 * @param policy   the policy that was checked
 * @param key      the key that was checked (the guard's caller chose it, so it is handed back as is)
 * @param reason   why the limiter could not decide ({@link Reason#isFailure()} is true)
 * @param decision the limiter's decision, or null when the limiter threw
 * @param cause    the exception the limiter threw, or null when it answered with a failure decision
 */
public record StoreError(Policy policy, String key, Reason reason, Decision decision, Throwable cause) {}
