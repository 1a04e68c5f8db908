/**
 * A guard for any callable operation (a login, a tool call, a job): an allowed check returns, a
 * refusal throws {@link dev.sluice.guard.RateLimitExceededException} carrying the retry-after, and
 * a store failure fails open and calls the user's {@link dev.sluice.guard.StoreErrorHandler}.
 */
package dev.sluice.guard;
