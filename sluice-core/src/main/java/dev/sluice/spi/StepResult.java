package dev.sluice.spi;

import dev.sluice.Policy;
import dev.sluice.Reason;

/**
 * What one atomic step against a store answered, before the core turns it into a {@link
 * dev.sluice.Decision} or a {@link dev.sluice.Refund}: the reference model's fields when the store
 * decided, or the reason it could not ({@link Reason#CORRUPT_STATE}, {@link Reason#INVALID_CLOCK},
 * {@link Reason#CONTENTION}). A backend translates its reply into one of these and nothing else.
 */
public final class StepResult {
  private final Reason failure;
  private final String detail;
  private final boolean allowed;
  private final long remaining;
  private final long resetAt;
  private final long retryAfter;
  private final long stamp;
  private final boolean wrote;
  private final Policy decidedBy;

  private StepResult(Policy decidedBy, Reason failure, String detail, boolean allowed, long remaining, long resetAt, long retryAfter,
                     long stamp, boolean wrote) {
    this.failure = failure;
    this.detail = detail;
    this.allowed = allowed;
    this.remaining = remaining;
    this.resetAt = resetAt;
    this.retryAfter = retryAfter;
    this.stamp = stamp;
    this.wrote = wrote;
    this.decidedBy = decidedBy;
  }

  /**
   * The store decided: {@code allowed}, the permits {@code remaining}, {@code resetAt} (epoch us),
   * {@code retryAfter} (us, refusals), the ticket {@code stamp} (acquires) and whether the step
   * {@code wrote} (an applied refund).
   */
  public static StepResult decided(boolean allowed, long remaining, long resetAt, long retryAfter, long stamp, boolean wrote) {
    return new StepResult(null, null, null, allowed, remaining, resetAt, retryAfter, stamp, wrote);
  }

  /**
   * This result, decided under {@code policy} instead of the call's: a store that pins a key to
   * other numbers (a PostgreSQL per-account override) says so, and the decision and its ticket
   * carry that policy.
   */
  public StepResult decidedBy(Policy policy) {
    return new StepResult(policy, failure, detail, allowed, remaining, resetAt, retryAfter, stamp, wrote);
  }

  /** The stored state is not one Sluice wrote; nothing was written. {@code detail} says where, never the raw key. */
  public static StepResult corrupt(String detail) {
    return new StepResult(null, Reason.CORRUPT_STATE, detail, false, 0, 0, 0, 0, false);
  }

  /** The clock reading (supplied or the store's) was refused; nothing was written. */
  public static StepResult invalidClock(String detail) {
    return new StepResult(null, Reason.INVALID_CLOCK, detail, false, 0, 0, 0, 0, false);
  }

  /** Compare-and-set retries ran out; nothing was written. */
  public static StepResult contention(String detail) {
    return new StepResult(null, Reason.CONTENTION, detail, false, 0, 0, 0, 0, false);
  }

  /** Null when the store decided; else why it could not. */
  public Reason failure() { return failure; }

  public String detail() { return detail; }

  public boolean allowed() { return allowed; }

  public long remaining() { return remaining; }

  public long resetAt() { return resetAt; }

  public long retryAfter() { return retryAfter; }

  public long stamp() { return stamp; }

  public boolean wrote() { return wrote; }

  /** The policy the store decided under when it is not the call's (see {@link #decidedBy}); else null. */
  public Policy decidedBy() { return decidedBy; }

  @Override public String toString() {
    return failure != null ? "StepResult[" + failure + ", " + detail + "]"
        : "StepResult[allowed=" + allowed + ", remaining=" + remaining + ", resetAt=" + resetAt
            + ", retryAfter=" + retryAfter + ", stamp=" + stamp + ", wrote=" + wrote + "]";
  }
}
