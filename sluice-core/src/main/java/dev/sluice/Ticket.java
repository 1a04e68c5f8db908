package dev.sluice;

import dev.sluice.internal.Checks;
import dev.sluice.model.ReferenceModel;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Proof that permits were counted, for {@link RateLimiter#refund(Ticket)} and
 * {@link RateLimiter#settle(Ticket, long)}. A ticket names the policy, the key, the permits and the
 * window (or log entry) they were counted in, so a refund after that window rolled does nothing.
 *
 * <p><b>Bound to its issuer and its budget.</b> Only an {@link Issuer} makes tickets, and every
 * limiter has its own (or one its builder was given on purpose): a ticket refunds only into a limiter
 * of the issuer that made it, only into the budget that charged it, and at most once. A ticket built
 * by anyone else, or one from another limiter or process, is {@link Refund#NO_EFFECT} there and stays
 * refundable where it belongs. A limiter never hands its issuer out, so a ticket cannot be forged for it.
 *
 * <p><b>Once, whatever the timing.</b> Every ticket has a 128-bit random {@link #id()}; the store
 * step that applies a refund or a settlement records that id as spent in the same atomic operation,
 * and keeps the record as long as the ticket can be used ({@link ReferenceModel#ticketExpiresAt}).
 * So a refund retried after {@link Refund#UNKNOWN} is either the one application or
 * {@link Refund#NO_EFFECT}, never a second.
 *
 * <p>The {@code stamp} is algorithm-specific: the window start for the window algorithms, the log
 * entry's time for the sliding log, and the acquire's instant for the token bucket and GCRA (a
 * refund goes back into the bucket, capped at its capacity). A ticket lives from its stamp for
 * twice its algorithm's span (a window, a bucket's full refill, a burst's drain), at most
 * {@link Checks#MAX_TICKET_LIFE_MICROS}; after that a refund or settlement has no effect.
 */
public final class Ticket {
  private final Issuer issuer;
  private final Object budget;
  private final Policy policy;
  private final String key;
  private final long permits;
  private final long stamp;
  private final long idHigh;
  private final long idLow;
  private final boolean restored;
  private volatile boolean spent;

  private Ticket(Issuer issuer, Object budget, Policy policy, String key, long permits, long stamp, long idHigh, long idLow,
                 boolean restored) {
    this.issuer = issuer;
    this.budget = budget;
    this.policy = Objects.requireNonNull(policy, "policy");
    this.key = Objects.requireNonNull(key, "key");
    this.permits = permits;
    this.stamp = stamp;
    this.idHigh = idHigh;
    this.idLow = idLow;
    this.restored = restored;
  }

  public Policy policy() { return policy; }

  public String key() { return key; }

  public long permits() { return permits; }

  public long stamp() { return stamp; }

  /**
   * This ticket's identity: 128 random bits from its issuer, as 32 lowercase hexadecimal digits. The
   * stores record it as spent when they apply the ticket; a service keys its tickets by it.
   */
  public String id() { return hex(idHigh, idLow); }

  /** True once a refund or a settlement consumed this ticket (in this process). */
  public boolean isSpent() { return spent; }

  @Override public String toString() {
    return "Ticket[policy=" + policy.name() + ", permits=" + permits + ", stamp=" + stamp + ", id=" + id() + "]";
  }

  private static String hex(long high, long low) {
    String h = Long.toHexString(high);
    String l = Long.toHexString(low);
    return "0".repeat(16 - h.length()) + h + "0".repeat(16 - l.length()) + l;
  }

  /**
   * Makes tickets and is the only one that may spend them. A limiter keeps its issuer to itself; a
   * backend author creates one per limiter (or shares one deliberately between limiters that
   * refund into one store, as the rate-limit service does behind its signed tickets).
   */
  public static final class Issuer {
    /**
     * Ids of restored tickets spent in this process, to the instant (epoch us) each can no longer be
     * used: a restored ticket is a new object each time, so its spent mark cannot live on the object.
     * Swept by life when full ({@link #MAX_RESTORED_SPENT}); while still full, restored tickets are
     * not given back (stricter, never weaker).
     */
    private final ConcurrentHashMap<String, Long> restoredSpent = new ConcurrentHashMap<>();
    private static final int MAX_RESTORED_SPENT = 1 << 20;

    /** A ticket for permits just counted; only this issuer can {@link #claim} it. */
    public Ticket issue(Policy policy, String key, long permits, long stamp) {
      return issue(null, policy, key, permits, stamp);
    }

    /**
     * A ticket for permits just counted in {@code budget}, the object that holds them (a memory
     * limiter): {@link #issued(Ticket, Object)} is true only there, so a limiter sharing this issuer
     * over other budgets cannot spend it. Null for a budget that lives in a store, where the store's
     * spent record keeps the ticket once.
     */
    public Ticket issue(Object budget, Policy policy, String key, long permits, long stamp) {
      ThreadLocalRandom r = ThreadLocalRandom.current();
      return new Ticket(this, budget, policy, key, permits, stamp, r.nextLong(), r.nextLong(), false);
    }

    /**
     * Rebuilds one of this issuer's tickets from its parts (a service decoding a ticket it signed):
     * {@code id} as {@link Ticket#id()} gave it. A restored ticket names no limiter; it refunds into
     * the budget of its policy and key, at most once in this process (this issuer remembers the
     * restored ids it spent, for the ticket's life) and at most once in a store (the store's spent
     * record).
     *
     * @throws IllegalArgumentException when {@code id} is not 32 lowercase hexadecimal digits
     */
    public Ticket restore(Policy policy, String key, long permits, long stamp, String id) {
      if (id == null || id.length() != 32 || !id.matches("[0-9a-f]{32}")) {
        throw new IllegalArgumentException(Checks.ticketId(id));
      }
      return new Ticket(this, null, policy, key, permits, stamp, Long.parseUnsignedLong(id.substring(0, 16), 16),
          Long.parseUnsignedLong(id.substring(16), 16), true);
    }

    /** True when this issuer made {@code ticket}. */
    public boolean issued(Ticket ticket) {
      return ticket != null && ticket.issuer == this;
    }

    /**
     * True when this issuer made {@code ticket} for {@code budget}: issued for it, or issued (or
     * restored) for no budget in particular.
     */
    public boolean issued(Ticket ticket, Object budget) {
      return issued(ticket) && (ticket.budget == null || ticket.budget == budget);
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
        if (ticket.restored) {
          long until = ReferenceModel.ticketExpiresAt(ticket.policy.algorithm(), ticket.stamp);
          if (restoredSpent.size() >= MAX_RESTORED_SPENT && !sweep(ticket.stamp)) {
            return false; // too many live restored tickets spent: refuse to give back rather than risk twice
          }
          if (restoredSpent.putIfAbsent(ticket.id(), until) != null) {
            return false;
          }
        }
        ticket.spent = true;
        return true;
      }
    }

    /**
     * Undoes {@link #claim} when the refund was certainly not applied (nothing reached the store, or
     * the store said it recorded nothing), or when its outcome is unknown and the store's own spent
     * record keeps a retry from applying it twice.
     */
    public void release(Ticket ticket) {
      if (issued(ticket)) {
        synchronized (ticket) {
          ticket.spent = false;
          if (ticket.restored) {
            restoredSpent.remove(ticket.id());
          }
        }
      }
    }

    /**
     * Forgets restored ids whose tickets' life ended before {@code stamp}, the stamp of a ticket being
     * spent (a reading of the clock its limiter decides on, never ahead of it); true when room was made.
     */
    private boolean sweep(long stamp) {
      restoredSpent.values().removeIf(until -> until <= stamp);
      return restoredSpent.size() < MAX_RESTORED_SPENT;
    }
  }
}
