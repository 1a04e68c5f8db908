package dev.sluice.redis;

/**
 * Why a Redis call did not give a decision, as passed to the failure mode's alert hook and to
 * {@link dev.sluice.RateLimitListener#onStoreCall}. Never thrown to the caller of a limiter.
 */
public final class RedisStoreException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public RedisStoreException(String message) {
    super(message, null, false, false);
  }
}
