package dev.sluice.http;

import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.jdbc.store.DownJdbcStore;
import dev.sluice.redis.RedisRateLimiter;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Real shared-store limiters whose store is down: each opens real connections to a local port
 * nothing listens on (bound, then closed), is refused by the kernel, and decides by its failure
 * mode, exactly as when the server is unreachable in production.
 */
final class DownStore {
  private DownStore() {}

  /** {@code "redis"}: the Redis limiter (Lettuce); {@code "jdbc"}: the JDBC versioned store through the PostgreSQL driver. */
  static RateLimiter limiter(String kind, Policy policy, FailureMode mode, RateLimitListener listener, List<AutoCloseable> cleanup) {
    return switch (kind) {
      case "redis" -> redis(policy, mode, listener, cleanup);
      case "jdbc" -> DownJdbcStore.limiter(policy, mode, listener);
      default -> throw new IllegalArgumentException("unknown store kind " + kind);
    };
  }

  static RedisRateLimiter redis(Policy policy, FailureMode mode, RateLimitListener listener, List<AutoCloseable> cleanup) {
    RedisClient client = RedisClient.create(RedisURI.create("redis://127.0.0.1:" + DownJdbcStore.closedPort()));
    cleanup.add(() -> client.shutdown(0, 2, TimeUnit.SECONDS));
    RedisRateLimiter limiter = RedisRateLimiter.builder(policy, client).failureMode(mode).timeout(Duration.ofSeconds(2))
        .listener(listener, false).build();
    cleanup.add(0, limiter);
    return limiter;
  }
}
