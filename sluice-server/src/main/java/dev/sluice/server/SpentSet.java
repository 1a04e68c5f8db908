package dev.sluice.server;

/**
 * The tickets already refunded, so that a ticket refunds once: in the process on the memory store
 * ({@link SpentTickets}). On Redis and PostgreSQL nothing is kept here ({@link #IN_THE_STORE}): the
 * limiter's own store step records the ticket as spent in the atomic step that applies it, which holds
 * across every instance behind a load balancer and, unlike a mark of the service's own, cannot outlive
 * a step that never ran. A ticket is named by its id (issue 26: never its text).
 */
interface SpentSet {
  /**
   * A shared store's: every ticket may be spent as far as the service knows, and the store step
   * answers no_effect for one it recorded. A mark kept beside the step made a refund whose mark was
   * written but whose answer was lost (a frozen or dropped connection) unusable although nothing was
   * applied (issue 26: ServiceTicketsOnceTest).
   */
  SpentSet IN_THE_STORE = new SpentSet() {
    @Override public Mark mark(String id, long expiresAtMicros, long nowMicros) {
      return Mark.MARKED;
    }

    @Override public void unmark(String id) {}
  };

  /**
   * Where {@code store}'s refunded tickets are remembered: in the process for a store of one process
   * (at most {@code capacity} live ones); for a shared one, by the limiter's store step itself, so that
   * a ticket refunds once across every instance.
   */
  static SpentSet of(dev.sluice.kernel.Store store, int capacity) {
    return store.shared() ? IN_THE_STORE : new SpentTickets(capacity);
  }

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
