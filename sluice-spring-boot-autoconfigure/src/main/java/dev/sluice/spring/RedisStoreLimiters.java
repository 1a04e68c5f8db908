package dev.sluice.spring;

import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.redis.RedisRateLimiter;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import java.time.Duration;

/** {@code sluice.store=redis}: a {@link RedisRateLimiter} per policy on one Lettuce client. */
final class RedisStoreLimiters implements StoreLimiters {
  private final AbstractRedisClient client;
  private final RedisURI uri;
  private final boolean owned;
  private final SluiceProperties props;

  /**
   * On the application's client ({@code owned} false) or one this store created and shuts down;
   * {@code uri} is where a standalone client connects (null: the client's own default, a cluster's seeds).
   */
  RedisStoreLimiters(AbstractRedisClient client, RedisURI uri, boolean owned, SluiceProperties props) {
    this.client = client;
    this.uri = uri;
    this.owned = owned;
    this.props = props;
  }

  /** A client of its own on {@code sluice.redis.url}. */
  static RedisStoreLimiters fromUrl(SluiceProperties props) {
    return new RedisStoreLimiters(RedisClient.create(props.getRedis().getUrl()), null, true, props);
  }

  @Override public String name() {
    return "redis";
  }

  @Override public RateLimiter build(Policy policy, RateLimitListener listener) {
    RedisRateLimiter.Builder b = client instanceof RedisClusterClient c ? RedisRateLimiter.builder(policy, c)
        : uri != null ? RedisRateLimiter.builder(policy, (RedisClient) client, uri) : RedisRateLimiter.builder(policy, (RedisClient) client);
    return StoreLimiters.configure(b, policy, listener, props).build();
  }

  @Override public void close() {
    if (owned) {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
  }
}
