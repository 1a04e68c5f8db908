package dev.sluice.internal;

import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticket;
import dev.sluice.spi.StoreRateLimiter;

/**
 * The decisions of a {@link StoreRateLimiter} at an instant the caller supplies, for a Sluice limiter
 * built on one that is a {@link dev.sluice.ClockedRateLimiter} (the versioned-store engine, whose
 * clock is always the caller's). Not on {@code StoreRateLimiter} itself: on a store that reads its
 * own clock (Redis, PostgreSQL) an instant from the caller has no meaning, so it is no public method
 * there. {@code StoreRateLimiter} grants the access as it loads; not API.
 */
public final class Pipelines {
  /** The pipeline's decisions at {@code now} (epoch microseconds of the limiter's ticker). */
  public interface Access {
    Decision acquireAt(StoreRateLimiter limiter, String key, long permits, Policy policy, long now);

    Decision peekAt(StoreRateLimiter limiter, String key, Policy policy, long now);

    Refund refundAt(StoreRateLimiter limiter, Ticket ticket, long now);

    Settlement settleAt(StoreRateLimiter limiter, Ticket ticket, long actualPermits, long now);
  }

  private static Access access;

  private Pipelines() {}

  /** Called once, by {@code StoreRateLimiter} as it loads. */
  public static synchronized void grant(Access a) {
    if (access != null) {
      throw new IllegalStateException("the pipeline's access is granted once, by StoreRateLimiter");
    }
    access = a;
  }

  /**
   * The access, for {@code limiter}: holding an instance means its class has loaded (and granted it);
   * class initialization publishes the field to every thread that sees the instance.
   */
  public static Access of(StoreRateLimiter limiter) {
    Checks.notNull("limiter", limiter);
    return access;
  }
}
