package dev.sluice;

/**
 * A limiter that can decide at an instant the caller supplies. Composition reads the clock once and
 * threads that one reading through every leg, so legs of one decision never disagree about "now".
 * The memory tier implements it; remote stores that read the server's clock do not.
 */
public interface ClockedRateLimiter extends RateLimiter {

  /** The clock this limiter reads when no instant is supplied. */
  Ticker ticker();

  /** {@link #tryAcquire(String, long, Policy)} at {@code nowMicros} (epoch microseconds of {@link #ticker()}). */
  Decision tryAcquireAt(String key, long permits, Policy policy, long nowMicros);

  /** {@link #peek(String, Policy)} at {@code nowMicros}. */
  Decision peekAt(String key, Policy policy, long nowMicros);

  /** {@link #refund(Ticket)} at {@code nowMicros}. */
  Refund refundAt(Ticket ticket, long nowMicros);

  /**
   * {@link #settle(Ticket, long)} at {@code nowMicros}. Every Sluice limiter that implements this
   * interface overrides it; the default, for limiters that predate settlement, settles at the
   * limiter's own clock.
   */
  default Settlement settleAt(Ticket ticket, long actualPermits, long nowMicros) {
    return settle(ticket, actualPermits);
  }
}
