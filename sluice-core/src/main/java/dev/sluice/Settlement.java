package dev.sluice;

/**
 * What {@link RateLimiter#settle(Ticket, long)} did. A settlement never throws for store trouble; it
 * reports. A ticket settles (or refunds) once: whichever comes first spends it, and a retry after
 * {@link #FAILED} or {@link #UNKNOWN} is either the one application or {@link #NO_EFFECT}.
 */
public enum Settlement {
  /**
   * The budget now reflects the actual cost: the unused part of the reservation went back, or the
   * overrun was charged (possibly into debt, which later requests wait out).
   */
  APPLIED,
  /**
   * Nothing changed: the actual equals the reservation; the window the reservation was counted in
   * rolled before its unused part could go back; the bucket is full; the budget's debt is already at
   * its ceiling; the ticket's life ended; or the ticket was spent, null or another limiter's.
   */
  NO_EFFECT,
  /** Not applied: the store could not be updated; an unused part stays charged, an overrun stays uncharged. */
  FAILED,
  /**
   * The outcome is not known: the request reached the store (or may have) and no answer came in
   * time. A retry answers {@link #APPLIED} if this attempt was not applied and {@link #NO_EFFECT} if it was.
   */
  UNKNOWN;

  /** The settlement a {@link Refund} amounts to: a settlement at 0 is a refund. */
  public static Settlement of(Refund refund) {
    return switch (refund) {
      case APPLIED -> APPLIED;
      case NO_EFFECT -> NO_EFFECT;
      case FAILED -> FAILED;
      case UNKNOWN -> UNKNOWN;
    };
  }
}
