package dev.sluice.compose;

import dev.sluice.Decision;
import dev.sluice.Ticket;
import java.util.Objects;

/**
 * Permits held by {@link Composition#reserve}: counted on every leg (and the shared state) until
 * {@link Composition#release(Reservation)} gives them back. Releasing twice gives them back once.
 * Not releasing is fine: a reservation is a spend that may be undone, not a lease that expires.
 */
public final class Reservation {
  private final String key;
  private final long permits;
  private final Decision decision;
  private final Ticket ticket;

  Reservation(String key, long permits, Decision decision, Ticket ticket) {
    this.key = key;
    this.permits = permits;
    this.decision = Objects.requireNonNull(decision, "decision");
    this.ticket = ticket;
  }

  /** The key reserved for; null for the shared default slot of a keyed composition. */
  public String key() { return key; }

  public long permits() { return permits; }

  /** The allowed decision that made this reservation. */
  public Decision decision() { return decision; }

  /** True once released. */
  public boolean isReleased() { return ticket == null || ticket.isSpent(); }

  Ticket ticket() { return ticket; }

  @Override public String toString() {
    return "Reservation[permits=" + permits + (isReleased() ? ", released" : "") + "]";
  }
}
