package dev.sluice;

/**
 * What {@link RateLimiter#refund(Ticket)} did. A refund never throws; it reports. A ticket changes a
 * budget at most once: a refund retried after {@link #FAILED} or {@link #UNKNOWN} is either the one
 * application or {@link #NO_EFFECT}, never a second.
 */
public enum Refund {
  /** The permits went back into the window or bucket they were counted in. */
  APPLIED,
  /**
   * Nothing to give back: the window rolled, the bucket is full, the ticket's life ended, or the
   * ticket was already used (here, or by another process through the same store).
   */
  NO_EFFECT,
  /** Not applied: the store could not be updated; the limiter stays stricter, never weaker. The ticket may be retried. */
  FAILED,
  /**
   * The outcome is not known: the request reached the store (or may have) and no answer came in
   * time. The store records the ticket as spent in the same step that applies it, so a retry answers
   * {@link #APPLIED} if this attempt was not applied and {@link #NO_EFFECT} if it was.
   */
  UNKNOWN
}
