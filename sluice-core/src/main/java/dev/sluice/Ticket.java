package dev.sluice;

import java.util.Objects;

/**
 * Proof that permits were counted, for {@link RateLimiter#refund(Ticket)} and
 * {@link RateLimiter#settle(Ticket, long)}. A ticket names the policy, the key, the permits and the
 * window (or log entry) they were counted in, so a refund after that window rolled does nothing.
 *
 * <p><b>Bound to its issuer.</b> Only an {@link Issuer} makes tickets, and every limiter has its own
 * (or one its builder was given on purpose): a ticket refunds only into a limiter of the issuer that
 * made it, and at most once. A ticket built by anyone else, or one from another limiter or process,
 * is {@link Refund#NO_EFFECT} there and stays refundable where it belongs. A limiter never hands its
 * issuer out, so a ticket cannot be forged for it.
 *
 * <p>The {@code stamp} is algorithm-specific: the window start for the window algorithms, the log
 * entry's time for the sliding log, and 0 for the token bucket and GCRA (a refund goes back into the
 * bucket, capped at its capacity).
 */
public final class Ticket {
  private final Issuer issuer;
  private final Policy policy;
  private final String key;
  private final long permits;
  private final long stamp;
  private volatile boolean spent;

  private Ticket(Issuer issuer, Policy policy, String key, long permits, long stamp) {
    this.issuer = issuer;
    this.policy = Objects.requireNonNull(policy, "policy");
    this.key = Objects.requireNonNull(key, "key");
    this.permits = permits;
    this.stamp = stamp;
  }

  public Policy policy() { return policy; }

  public String key() { return key; }

  public long permits() { return permits; }

  public long stamp() { return stamp; }

  /** True once a refund or a settlement consumed this ticket. */
  public boolean isSpent() { return spent; }

  @Override public String toString() {
    return "Ticket[policy=" + policy.name() + ", permits=" + permits + ", stamp=" + stamp + "]";
  }

  /**
   * Makes tickets and is the only one that may spend them. A limiter keeps its issuer to itself; a
   * backend author creates one per limiter (or shares one deliberately between limiters that
   * refund into one store, as the rate-limit service does behind its signed tickets).
   */
  public static final class Issuer {
    /** A ticket for permits just counted; only this issuer can {@link #claim} it. */
    public Ticket issue(Policy policy, String key, long permits, long stamp) {
      return new Ticket(this, policy, key, permits, stamp);
    }

    /** True when this issuer made {@code ticket}. */
    public boolean issued(Ticket ticket) {
      return ticket != null && ticket.issuer == this;
    }

    /**
     * Marks one of this issuer's tickets spent before its permits are given back; true for the one
     * caller that did so. False, and the ticket untouched, for a ticket another issuer made or one
     * already spent, so a ticket refunded twice (by mistake or concurrently) returns its permits once.
     */
    public boolean claim(Ticket ticket) {
      if (!issued(ticket)) {
        return false;
      }
      synchronized (ticket) {
        if (ticket.spent) {
          return false;
        }
        ticket.spent = true;
        return true;
      }
    }

    /** Undoes {@link #claim} when the refund was certainly not applied (nothing reached the store), so it may be retried. */
    public void release(Ticket ticket) {
      if (issued(ticket)) {
        synchronized (ticket) {
          ticket.spent = false;
        }
      }
    }
  }
}
