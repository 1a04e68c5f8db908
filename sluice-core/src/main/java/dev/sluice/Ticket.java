package dev.sluice;

import java.util.Objects;

/**
 * Proof that permits were counted, for {@link RateLimiter#refund(Ticket)}. A ticket names the policy,
 * the key, the permits and the window (or log entry) they were counted in, so a refund after that
 * window rolled does nothing. A ticket refunds at most once per limiter instance.
 *
 * <p>The {@code stamp} is algorithm-specific: the window start for the window algorithms, the log
 * entry's time for the sliding log, and 0 for the token bucket and GCRA (a refund goes back into the
 * bucket, capped at its capacity).
 */
public final class Ticket {
  private final Policy policy;
  private final String key;
  private final long permits;
  private final long stamp;
  private volatile boolean spent;

  public Ticket(Policy policy, String key, long permits, long stamp) {
    this.policy = Objects.requireNonNull(policy, "policy");
    this.key = Objects.requireNonNull(key, "key");
    this.permits = permits;
    this.stamp = stamp;
  }

  public Policy policy() { return policy; }

  public String key() { return key; }

  public long permits() { return permits; }

  public long stamp() { return stamp; }

  /** True once a refund consumed this ticket. */
  public boolean isSpent() { return spent; }

  /**
   * Marks the ticket spent; true for the one caller that did so. Limiters call this before giving
   * permits back, so a ticket refunded twice (by mistake or concurrently) returns its permits once.
   */
  public synchronized boolean spend() {
    if (spent) {
      return false;
    }
    spent = true;
    return true;
  }

  /** Undoes {@link #spend()} when the refund could not be applied (store failure), so it may be retried. */
  public synchronized void unspend() {
    spent = false;
  }

  @Override public String toString() {
    return "Ticket[policy=" + policy.name() + ", permits=" + permits + ", stamp=" + stamp + "]";
  }
}
