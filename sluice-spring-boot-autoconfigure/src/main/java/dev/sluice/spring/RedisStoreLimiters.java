package dev.sluice.spring;

import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.redis.RedisRateLimiter;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.cluster.RedisClusterClient;
import java.time.Duration;

/** {@code sluice.store=redis}: a {@link RedisRateLimiter} per policy on one Lettuce client. */
final class RedisStoreLimiters implements StoreLimiters {
  private final AbstractRedisClient client;
  private final boolean owned;
  private final SluiceProperties props;

  /** On the application's client ({@code owned} false) or one this store created and shuts down. */
  RedisStoreLimiters(AbstractRedisClient client, boolean owned, SluiceProperties props) {
    this.client = client;
    this.owned = owned;
    this.props = props;
  }

  /** A client of its own on {@code sluice.redis.url}. */
  static RedisStoreLimiters fromUrl(SluiceProperties props) {
    return new RedisStoreLimiters(RedisClient.create(props.getRedis().getUrl()), true, props);
  }

  @Override public String name() {
    return "redis";
  }

  @Override public RateLimiter build(Policy policy, RateLimitListener listener) {
    RedisRateLimiter.Builder b = client instanceof RedisClusterClient c
        ? RedisRateLimiter.builder(policy, c) : RedisRateLimiter.builder(policy, (RedisClient) client);
    return StoreLimiters.configure(b, policy, listener, props).build();
  }

  @Override public void close() {
    if (owned) {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
  }
}
