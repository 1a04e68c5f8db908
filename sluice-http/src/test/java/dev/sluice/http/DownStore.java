package dev.sluice.http;

import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.jdbc.store.JdbcVersionedStore;
import dev.sluice.redis.RedisRateLimiter;
import dev.sluice.store.VersionedStoreRateLimiter;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.postgresql.ds.PGSimpleDataSource;

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
      case "jdbc" -> limiter(policy, mode, listener);
      default -> throw new IllegalArgumentException("unknown store kind " + kind);
    };
  }

  static VersionedStoreRateLimiter limiter(Policy policy, FailureMode mode, RateLimitListener listener) {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setServerNames(new String[] {"127.0.0.1"});
    ds.setPortNumbers(new int[] {closedPort()});
    ds.setDatabaseName("sluice_down");
    ds.setUser("postgres");
    ds.setConnectTimeout(2);
    JdbcVersionedStore store = JdbcVersionedStore.builder(ds).dialect(JdbcVersionedStore.Dialect.POSTGRESQL).build();
    return VersionedStoreRateLimiter.builder(policy, store).failureMode(mode).timeout(Duration.ofSeconds(2))
        .listener(listener, false).build();
  }

  static RedisRateLimiter redis(Policy policy, FailureMode mode, RateLimitListener listener, List<AutoCloseable> cleanup) {
    RedisClient client = RedisClient.create(RedisURI.create("redis://127.0.0.1:" + closedPort()));
    cleanup.add(() -> client.shutdown(0, 2, TimeUnit.SECONDS));
    RedisRateLimiter limiter = RedisRateLimiter.builder(policy, client).failureMode(mode).timeout(Duration.ofSeconds(2))
        .listener(listener, false).build();
    cleanup.add(0, limiter);
    return limiter;
  }

  static int closedPort() {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
