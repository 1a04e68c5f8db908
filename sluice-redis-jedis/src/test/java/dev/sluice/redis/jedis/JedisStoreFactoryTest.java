package dev.sluice.redis.jedis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.kernel.Store;
import dev.sluice.kernel.StoreFactory;
import dev.sluice.kernel.StoreOptions;
import dev.sluice.redis.SharedRedis;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The kernel finds the store {@code redis-jedis} on the class path, and it decides on Redis. */
class JedisStoreFactoryTest {
  @Test void theKernelOpensRedisThroughJedisByName() {
    SharedRedis.client(); // skipped loudly when the shared server is unreachable
    try (Store store = StoreFactory.named("redis-jedis").open(StoreOptions.defaults().withUrl(SharedRedis.URL)
        .withTimeout(Duration.ofSeconds(2)))) {
      assertThat(store.name()).isEqualTo("redis-jedis");
      assertThat(store.shared()).isTrue();
      assertThat(store.probe()).as("readiness").isNull();
      RateLimiter l = store.limiter(Policy.fixedWindow("factory-" + System.nanoTime(), 2, Duration.ofMinutes(1)),
          RateLimitListener.NONE);
      assertThat(l.tryAcquire("k").path()).isEqualTo(Path.PRIMARY);
      assertThat(l.tryAcquire("k").remaining()).isZero();
      assertThat(l.tryAcquire("k").allowed()).isFalse();
    }
  }
}
