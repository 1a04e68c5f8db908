/**
 * A guard for any callable operation (a login, a tool call, a job): an allowed check returns, a
 * refusal throws {@link dev.sluice.guard.RateLimitExceededException} carrying the retry-after, and
 * a store failure is decided by the guard's {@link dev.sluice.FailureMode}: open by default, so the
 * call proceeds and the mode's alert is told.
 */
package dev.sluice.guard;
