package dev.sluice.internal;

import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticket;
import dev.sluice.model.ReferenceModel;

/**
 * The one rule for spending a ticket, a refund or a settlement, on every tier: the memory tier
 * ({@code MemoryRateLimiter}, {@code HashedSlotRateLimiter}) and the store-backed pipeline alike. A
 * limiter supplies only its {@link Step}, which applies the permits to its budget; everything around
 * it is decided here, once:
 *
 * <ul>
 *   <li>a null ticket is {@link Refund#NO_EFFECT} and is not reported;
 *   <li>a ticket the limiter did not issue (for its budget, on a memory limiter) is the failure
 *       mode's ({@link FailureMode#refundForeign}: the fallback's own tickets go there, any other has
 *       no effect) and stays refundable where it belongs;
 *   <li>a ticket is claimed once ({@link Ticket.Issuer#claim}); a second spend has no effect;
 *   <li>the clock is checked <b>after</b> the claim and a bad reading gives the claim back:
 *       {@link Refund#FAILED}, the ticket kept, a retry on a good clock applies it. A refund and a
 *       settlement treat a bad clock identically (issue 28);
 *   <li>a ticket past its life ({@link ReferenceModel#ticketLive}) has no effect and stays spent;
 *   <li>a step that answers {@link Refund#FAILED} or {@link Refund#UNKNOWN}, or throws (FAILED),
 *       gives the claim back, so it can be retried: the retry is the one application or no effect;
 *   <li>the listener is told of every refund and settlement of a non-null ticket.
 * </ul>
 *
 * <p>Not on any hot path: acquires never come here, so the memory tier's allocation-free
 * {@code tryConsume} is untouched.
 */
public final class TicketSpending {
  /** The {@code now} of a limiter whose store reads its own clock: no liveness check on this side ({@code Backend.STORE_CLOCK}). */
  public static final long STORE_CLOCK = dev.sluice.spi.Backend.STORE_CLOCK;

  private TicketSpending() {}

  /** Applies a claimed, live ticket to its budget. */
  @FunctionalInterface
  public interface Step {
    /**
     * Changes {@code ticket}'s budget by {@code delta} permits at {@code now}: below zero gives them
     * back, above zero charges them (a settlement's overrun); {@code refund} is true for a refund (of
     * all the ticket's permits, up to its policy's limit) and false for a settlement. Answers
     * {@link Refund#APPLIED}, {@link Refund#NO_EFFECT} (nothing to change), {@link Refund#FAILED}
     * (certainly not applied) or {@link Refund#UNKNOWN}. A step that throws a runtime exception is FAILED.
     */
    Refund apply(Ticket ticket, long delta, boolean refund, long now);
  }

  /**
   * The clock rule of every tier: a supplied reading must lie in 1..{@link Checks#MAX_CLOCK}; a
   * limiter without a supplied clock passes {@link #STORE_CLOCK}, which only it may.
   */
  public static boolean plausible(boolean supplied, long now) {
    return supplied ? Checks.validClock(now) : now == STORE_CLOCK;
  }

  /**
   * Refunds {@code ticket} at {@code now} (valid when {@code clockValid}) through {@code step};
   * {@code budget} is the memory budget the ticket must have been issued for, or null on a store.
   */
  public static Refund refund(Ticket.Issuer issuer, Object budget, FailureMode foreign, RateLimitListener listener,
                              Ticket ticket, long now, boolean clockValid, Step step) {
    if (ticket == null) {
      return Refund.NO_EFFECT;
    }
    Refund r;
    if (!issued(issuer, budget, ticket)) {
      r = foreign.refundForeign(ticket);
    } else {
      long permits = Math.min(ticket.permits(), ticket.policy().limit()); // more than the limit gives back the same: all of it
      r = permits < 1 || !issuer.claim(ticket) ? Refund.NO_EFFECT : spend(issuer, ticket, -permits, true, now, clockValid, step);
    }
    listener.onRefund(ticket.policy(), r);
    return r;
  }

  /**
   * Settles {@code ticket} at {@code actualPermits} (validated first: a programmer error throws) at
   * {@code now}: a {@link Step} giving back the unused part or charging the excess; an actual equal
   * to the reservation spends the ticket and changes nothing.
   */
  public static Settlement settle(Ticket.Issuer issuer, Object budget, FailureMode foreign, RateLimitListener listener,
                                  Ticket ticket, long actualPermits, long now, boolean clockValid, Step step) {
    if (ticket == null) {
      return Settlement.NO_EFFECT;
    }
    long delta = Checks.settlementDelta(ticket, actualPermits);
    Policy p = ticket.policy();
    Settlement r;
    if (!issued(issuer, budget, ticket)) {
      r = foreign.settleForeign(ticket, actualPermits);
    } else if (!issuer.claim(ticket) || delta == 0) {
      r = Settlement.NO_EFFECT;
    } else {
      r = Settlement.of(spend(issuer, ticket, delta, false, now, clockValid, step));
    }
    listener.onSettle(p, r);
    return r;
  }

  private static boolean issued(Ticket.Issuer issuer, Object budget, Ticket ticket) {
    return budget == null ? issuer.issued(ticket) : issuer.issued(ticket, budget);
  }

  /** One step for a claimed ticket; the claim is given back whenever the ticket may be retried. */
  private static Refund spend(Ticket.Issuer issuer, Ticket ticket, long delta, boolean refund, long now, boolean clockValid,
                              Step step) {
    if (!clockValid) {
      issuer.release(ticket);
      return Refund.FAILED;
    }
    if (now != STORE_CLOCK && !ReferenceModel.ticketLive(ticket.policy().algorithm(), ticket.stamp(), now)) {
      return Refund.NO_EFFECT; // its life ended: no store records it any longer, so nothing may apply it
    }
    Refund r;
    try {
      r = step.apply(ticket, delta, refund, now);
    } catch (RuntimeException e) {
      r = Refund.FAILED;
    }
    if (r == Refund.FAILED || r == Refund.UNKNOWN) {
      issuer.release(ticket); // nothing applied for sure, or the store's spent record keeps a retry to once
    }
    return r;
  }
}
