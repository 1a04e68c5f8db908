package dev.sluice.redis.redisson;

import dev.sluice.kernel.RedisTransportStore;
import dev.sluice.kernel.Store;
import dev.sluice.kernel.StoreFactory;
import dev.sluice.kernel.StoreOptions;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * The kernel's store {@code redis-redisson}: Redis at the options' URL (one standalone server) through
 * a Redisson client of its own (lazily connected, so that an unreachable server does not stop the
 * store from opening), shut down with the store. Found on the class path through
 * {@code META-INF/services} when this module and sluice-kernel are there.
 */
public final class RedissonStoreFactory implements StoreFactory {
  /** For {@link java.util.ServiceLoader}. */
  public RedissonStoreFactory() {}

  @Override public String name() {
    return "redis-redisson";
  }

  @Override public Store open(StoreOptions o) {
    Config config = new Config().setLazyInitialization(true);
    RedissonClient redisson;
    try {
      config.useSingleServer().setAddress(o.url());
      redisson = Redisson.create(config);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException(Store.redact(o.url()) + " is not a Redis URL Redisson can open (" + e.getMessage()
          + "); write e.g. redis://127.0.0.1:6379");
    }
    return new RedisTransportStore(name(), o.url(), RedissonTransport.of(redisson), redisson::shutdown, o.failureModes(),
        o.timeout());
  }
}
