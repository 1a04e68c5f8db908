package dev.sluice.compose;

import dev.sluice.Ticket;
import java.util.WeakHashMap;

/**
 * What each composed ticket charged, until it is refunded or forgotten. {@link Ticket} is a closed
 * value class, so a composed ticket cannot carry its leg tickets itself; this book maps the composed
 * ticket (by identity) to them. Entries are weak: a ticket the caller drops is collected with its
 * entry, so the book never grows with tickets nobody will refund. Striped so that threads deciding
 * at once rarely meet on one lock.
 */
final class TicketBook {
  private static final int STRIPES = 16;
  private final Stripe[] stripes = new Stripe[STRIPES];

  TicketBook() {
    for (int i = 0; i < STRIPES; i++) {
      stripes[i] = new Stripe();
    }
  }

  void put(Ticket composed, AllOf.Charges charges) {
    Stripe s = stripe(composed);
    synchronized (s) {
      s.put(composed, charges);
    }
  }

  AllOf.Charges remove(Ticket composed) {
    Stripe s = stripe(composed);
    synchronized (s) {
      return s.remove(composed);
    }
  }

  private Stripe stripe(Ticket t) {
    int h = System.identityHashCode(t);
    return stripes[(h ^ (h >>> 16)) & (STRIPES - 1)];
  }

  /** Ticket does not override equals, so this map is by identity. */
  private static final class Stripe extends WeakHashMap<Ticket, AllOf.Charges> {}
}
