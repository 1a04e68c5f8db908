package dev.sluice;

/** What {@link RateLimiter#refund(Ticket)} did. A refund never throws; it reports. */
public enum Refund {
  /** The permits went back into the window or bucket they were counted in. */
  APPLIED,
  /** Nothing to give back: the window rolled, the bucket is full, or the ticket was already used. */
  NO_EFFECT,
  /** The store could not be updated; the limiter stays stricter, never weaker. */
  FAILED
}
