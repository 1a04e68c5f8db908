package dev.sluice.redis.jedis;

import dev.sluice.kernel.RedisTransportStore;
import dev.sluice.kernel.Store;
import dev.sluice.kernel.StoreFactory;
import dev.sluice.kernel.StoreOptions;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;

/**
 * The kernel's store {@code redis-jedis}: Redis at the options' URL (one standalone server) through a
 * Jedis client and a {@link JedisTransport} of its own, both closed with the store. Found on the class
 * path through {@code META-INF/services} when this module and sluice-kernel are there.
 */
public final class JedisStoreFactory implements StoreFactory {
  /** For {@link java.util.ServiceLoader}. */
  public JedisStoreFactory() {}

  @Override public String name() {
    return "redis-jedis";
  }

  @Override public Store open(StoreOptions o) {
    UnifiedJedis jedis;
    try {
      jedis = RedisClient.create(o.url());
    } catch (RuntimeException e) {
      throw new IllegalArgumentException(Store.redact(o.url()) + " is not a Redis URL (" + e.getMessage()
          + "); write e.g. redis://127.0.0.1:6379");
    }
    JedisTransport transport = JedisTransport.of(jedis);
    return new RedisTransportStore(name(), o.url(), transport, () -> {
      transport.close();
      jedis.close();
    }, o.failureModes(), o.timeout());
  }
}
