package dev.sluice.redis;

import dev.sluice.Path;
import dev.sluice.RateLimiter;
import dev.sluice.tck.RateLimiterContract;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The kit's outage fixture on Redis: private servers (one standalone, or every master of a cluster)
 * frozen with SIGSTOP for {@link #down} and thawed for {@link #up}, never the shared server. Public for
 * the other clients' modules (sluice-redis-jedis, sluice-redis-redisson), through the test-jar.
 */
public final class RedisOutage implements RateLimiterContract.Outage {
  private final RedisRateLimiter limiter;
  private final List<RedisServerProcess> servers;
  private final AutoCloseable cleanup;

  /** {@code cleanup} runs after the limiter closes and every server is thawed. */
  public RedisOutage(RedisRateLimiter limiter, List<RedisServerProcess> servers, AutoCloseable cleanup) {
    this.limiter = limiter;
    this.servers = servers;
    this.cleanup = cleanup;
  }

  @Override public RateLimiter limiter() {
    return limiter;
  }

  @Override public void down() throws Exception {
    for (RedisServerProcess s : servers) {
      s.freeze();
    }
  }

  @Override public void up() throws Exception {
    for (RedisServerProcess s : servers) {
      s.thaw();
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (limiter.peek("probe").path() != Path.PRIMARY) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("Redis did not answer within 10 s of SIGCONT");
      }
      Thread.onSpinWait();
    }
  }

  @Override public void close() throws Exception {
    for (RedisServerProcess s : servers) {
      s.thaw();
    }
    limiter.close();
    cleanup.close();
  }
}
