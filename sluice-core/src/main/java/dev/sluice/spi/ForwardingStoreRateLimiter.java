package dev.sluice.spi;

import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticket;
import java.util.concurrent.CompletionStage;

/**
 * The public type of a store that has more to offer than decisions ({@code JdbcRateLimiter}'s schema
 * and sweep, {@code RedisRateLimiter}'s connection): every decision goes to the {@link StoreRateLimiter}
 * it was built with, unchanged, and the subclass adds only its store's administration. The methods
 * are final, so a store's type can change nothing of the pipeline; the call is one direct call to a
 * final class.
 */
public abstract class ForwardingStoreRateLimiter implements RateLimiter, AutoCloseable {
  private final StoreRateLimiter limiter;

  protected ForwardingStoreRateLimiter(StoreRateLimiter limiter) {
    this.limiter = limiter;
  }

  @Override public final Policy policy() {
    return limiter.policy();
  }

  @Override public final Decision tryAcquire(String key, long permits, Policy policy) {
    return limiter.tryAcquire(key, permits, policy);
  }

  @Override public final CompletionStage<Decision> tryAcquireAsync(String key, long permits, Policy policy) {
    return limiter.tryAcquireAsync(key, permits, policy);
  }

  @Override public final Decision peek(String key, Policy policy) {
    return limiter.peek(key, policy);
  }

  @Override public final Refund refund(Ticket ticket) {
    return limiter.refund(ticket);
  }

  @Override public final Settlement settle(Ticket ticket, long actualPermits) {
    return limiter.settle(ticket, actualPermits);
  }

  /**
   * Deletes {@code key}'s state under {@code policy} and, in fallback mode, the fallback limiter's
   * count too. A failure is logged and reported to the listener, never thrown.
   */
  @Override public final void reset(String key, Policy policy) {
    limiter.reset(key, policy);
  }

  /** Closes what the store opened itself (a connection, an executor), never what it was given. */
  @Override public void close() {
    limiter.close();
  }

  @Override public String toString() {
    return limiter.toString();
  }

  /** The limiter every decision goes to, for a subclass that decides at an instant it is given. */
  protected final StoreRateLimiter limiter() {
    return limiter;
  }
}
