package dev.sluice.redis;

import org.junit.jupiter.api.Assumptions;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;

/**
 * The shared Redis of the test machine ({@code SLUICE_REDIS_URL}, default redis://127.0.0.1:6379).
 * Unreachable: tests are skipped with a loud notice, except under {@code CI=true}, where they fail.
 * Other builds use the same server at the same time: tests use random policy names and never flush.
 */
public final class SharedRedis {
  public static final String URL = System.getenv().getOrDefault("SLUICE_REDIS_URL", "redis://127.0.0.1:6379");
  private static RedisClient client;
  private static StatefulRedisConnection<String, String> admin;
  private static String unreachable;

  private SharedRedis() {}

  /** The shared client, or a skipped (failed under CI) test when the server cannot be reached. */
  public static synchronized RedisClient client() {
    if (client == null && unreachable == null) {
      RedisURI uri = RedisURI.create(URL);
      uri.setTimeout(Duration.ofSeconds(5));
      RedisClient c = RedisClient.create(uri);
      try {
        admin = c.connect();
        admin.sync().ping();
        client = c;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> c.shutdown(Duration.ZERO, Duration.ofSeconds(1))));
      } catch (RuntimeException e) {
        c.shutdown();
        unreachable = "Redis at " + URL + " is not reachable (" + e + ")";
      }
    }
    if (unreachable != null) {
      if ("true".equals(System.getenv("CI"))) {
        throw new AssertionError(unreachable + " and CI=true: Redis tests must run in CI");
      }
      System.err.println("!!! SKIPPING Redis tests: " + unreachable + " (set SLUICE_REDIS_URL)");
      Assumptions.abort(unreachable);
    }
    return client;
  }

  /** A plain connection for inspecting the server (not through the limiter). */
  static synchronized StatefulRedisConnection<String, String> admin() {
    client();
    return admin;
  }
}
