package dev.sluice.compose;

import dev.sluice.Ticket;
import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What each composed ticket charged, until it is refunded or dropped. {@link Ticket} is a closed
 * value class, so a composed ticket cannot carry its leg tickets itself; this book maps the composed
 * ticket, by identity and through a weak reference, to them.
 *
 * <p>Why not a {@code WeakHashMap}, which stood here before: its entry keeps the value (the leg
 * tickets, their keys) until the map is next written after the GC cleared the key, so it kept what
 * every ticket dropped since the last write had charged; after a few million decisions whose tickets
 * were dropped, 570 thousand leg tickets stayed live through full GCs (issue 26, finding 8). Here
 * the GC hands every cleared reference to one queue, and one daemon thread for the whole process
 * ({@link Reaper}) takes each off its book at once: what a dropped ticket charged is unreachable one
 * GC after the ticket, without another decision. A decision pays one weak reference and one map
 * insert; a refund one map removal.
 */
final class TicketBook {
  private final ConcurrentHashMap<Object, AllOf.Charges> entries = new ConcurrentHashMap<>();

  void put(Ticket composed, AllOf.Charges charges) {
    entries.put(new Entry(composed, this), charges);
  }

  /** What {@code composed} charged, taken out of the book; null when it is not in it. */
  AllOf.Charges remove(Ticket composed) {
    return entries.remove(new Lookup(composed));
  }

  /** Tickets in the book (tests). */
  int size() {
    return entries.size();
  }

  /**
   * A composed ticket's key in the book: equal only to itself, so the map compares by identity, and
   * the {@link Lookup} of a refund finds it through its referent.
   */
  private static final class Entry extends WeakReference<Ticket> {
    private final int hash;
    private final TicketBook book;

    Entry(Ticket ticket, TicketBook book) {
      super(ticket, Reaper.DROPPED);
      this.hash = System.identityHashCode(ticket);
      this.book = book;
    }

    @Override public int hashCode() {
      return hash;
    }

    @Override public boolean equals(Object o) {
      return o == this;
    }
  }

  /**
   * The probe of {@link #remove}: equal to the entry of the same ticket object. Not symmetric with
   * {@link Entry#equals}, which the map never calls with a probe: it asks the probe.
   */
  private static final class Lookup {
    private final Ticket ticket;

    Lookup(Ticket ticket) {
      this.ticket = ticket;
    }

    @Override public int hashCode() {
      return System.identityHashCode(ticket);
    }

    @Override public boolean equals(Object o) {
      return o instanceof Entry e && e.get() == ticket;
    }
  }

  /**
   * Takes the entries of dropped tickets off their books, on one daemon thread started with the first
   * entry made in the process. An entry of a book that is itself dropped is never queued (a reference
   * nobody holds is collected with its referent), so the thread holds no book alive.
   */
  private static final class Reaper {
    static final ReferenceQueue<Ticket> DROPPED = new ReferenceQueue<>();

    static {
      Thread t = new Thread(Reaper::run, "sluice-ticket-book");
      t.setDaemon(true);
      t.start();
    }

    private Reaper() {}

    private static void run() {
      while (true) {
        try {
          Entry e = (Entry) DROPPED.remove();
          e.book.entries.remove(e);
        } catch (InterruptedException e) {
          // nobody else takes the entries off: keep going
        }
      }
    }
  }
}
