package dev.sluice.model;

import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.Reason;

/**
 * The result fields of one reference step. Mutable scratch: a caller reuses one per thread or per
 * locked entry, so a step allocates nothing. Not thread-safe.
 */
public final class Outcome {
  boolean allowed;
  boolean invalidClock;
  boolean corrupt;
  boolean wrote;
  long remaining;
  long resetAt;
  long retryAfter;
  long stamp;

  /** True when the permits fit and were counted. */
  public boolean allowed() { return allowed; }

  /** True when the clock reading was rejected (not positive); nothing else is meaningful then. */
  public boolean invalidClock() { return invalidClock; }

  /**
   * True when the state lies further ahead of the clock than its policy could have written it, beyond
   * {@link dev.sluice.internal.Checks#CLOCK_TOLERANCE_MICROS}: it is not trusted, nothing was written,
   * and nothing else is meaningful.
   */
  public boolean corrupt() { return corrupt; }

  /** True when the step changed the state (only allowed acquires, refunds that applied). */
  public boolean wrote() { return wrote; }

  /** Permits left after the step. */
  public long remaining() { return remaining; }

  /** Epoch microseconds when the window ends or the bucket is full again. */
  public long resetAt() { return resetAt; }

  /** Microseconds until the refused request could fit; 0 when allowed. */
  public long retryAfter() { return retryAfter; }

  /** The ticket stamp of an allowed acquire (window start, log entry time, or the acquire's instant for the buckets). */
  public long stamp() { return stamp; }

  /**
   * The refusal this outcome decides under {@code p}: {@link Reason#INVALID_CLOCK},
   * {@link Reason#CORRUPT_STATE}, or {@link Reason#LIMIT_EXCEEDED} with its numbers. The one mapping of
   * the tiers that run the model in process (the memory tier, the kit's oracle).
   */
  public Decision refusal(Policy p) {
    if (invalidClock) {
      return Decision.refused(p, Reason.INVALID_CLOCK, 0, 0, 0);
    }
    if (corrupt) {
      return Decision.refused(p, Reason.CORRUPT_STATE, 0, 0, 0);
    }
    return Decision.refused(p, Reason.LIMIT_EXCEEDED, remaining, resetAt, retryAfter);
  }

  void set(boolean allowed, long remaining, long resetAt, long retryAfter, long stamp, boolean wrote) {
    this.allowed = allowed;
    this.invalidClock = false;
    this.corrupt = false;
    this.remaining = remaining;
    this.resetAt = resetAt;
    this.retryAfter = retryAfter;
    this.stamp = stamp;
    this.wrote = wrote;
  }

  void invalid() {
    set(false, 0, 0, 0, 0, false);
    this.invalidClock = true;
  }

  void corrupted() {
    set(false, 0, 0, 0, 0, false);
    this.corrupt = true;
  }

  @Override public String toString() {
    return "Outcome[allowed=" + allowed + ", invalidClock=" + invalidClock + ", corrupt=" + corrupt + ", wrote=" + wrote + ", remaining=" + remaining
        + ", resetAt=" + resetAt + ", retryAfter=" + retryAfter + ", stamp=" + stamp + "]";
  }
}
