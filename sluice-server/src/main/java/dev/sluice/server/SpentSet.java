package dev.sluice.server;

/**
 * The tickets already refunded, so that a ticket refunds once: in the process on the memory store
 * ({@link SpentTickets}), and in the shared store itself on Redis and PostgreSQL, so that a ticket
 * refunds once across every instance behind a load balancer. A ticket is named by its id (issue 26: never its text).
 */
interface SpentSet {
  /** What marking a ticket found. */
  enum Mark {
    /** Not spent before; now it is. */
    MARKED,
    /** Refunded before (here or at another instance). */
    ALREADY_SPENT,
    /** The local set holds as many live tickets as it may; refused rather than forgetting one. */
    FULL,
    /** The shared store could not be asked; the refund fails (the limiter stays stricter). */
    FAILED
  }

  /** Records {@code id} as spent until {@code expiresAtMicros} (epoch), atomically: of two callers one marks. */
  Mark mark(String id, long expiresAtMicros, long nowMicros);

  /** Forgets {@code id} after a refund the store could not apply, so that it may be retried. */
  void unmark(String id);
}
