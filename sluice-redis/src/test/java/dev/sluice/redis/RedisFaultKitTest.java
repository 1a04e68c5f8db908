package dev.sluice.redis;

import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.spi.StoreRateLimiter;
import dev.sluice.tck.FaultContract;
import dev.sluice.tck.FaultProxy;
import io.lettuce.core.RedisClient;
import java.time.Duration;
import java.util.Optional;
import java.util.function.Function;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The fault kit against standalone Redis: a private redis-server on port 7201 (the kit stops,
 * freezes and restarts it), reached through the kit's proxy by a client left at Lettuce's defaults,
 * as an application builds it. Such a limiter (built on the client) fails every script whose reply
 * was lost as its connection drops, so no acquire is sent twice (docs/redis.md).
 */
class RedisFaultKitTest extends FaultContract {
  static final int PORT = 7201;
  private static RedisServerProcess server;
  private static FaultProxy proxy;
  private static RedisClient throughProxy;
  private static RedisClient direct;

  @BeforeAll static void start() throws Exception {
    server = RedisServerProcess.start(PORT);
    proxy = FaultProxy.toLoopback(PORT);
    throughProxy = RedisClient.create("redis://" + proxy.host() + ":" + proxy.port());
    direct = RedisClient.create(server.uri());
  }

  @AfterAll static void stop() throws Exception {
    for (RedisClient c : new RedisClient[] {throughProxy, direct}) {
      if (c != null) {
        c.shutdown(Duration.ZERO, Duration.ofSeconds(1));
      }
    }
    if (proxy != null) {
      proxy.close();
    }
    if (server != null) {
      server.close();
    }
  }

  @Override protected Fixture fixture() {
    return fixture(proxy, p -> RedisRateLimiter.builder(p, throughProxy), p -> RedisRateLimiter.builder(p, direct),
        Optional.of(new Store() {
          @Override public void stop() throws Exception {
            server.stop();
          }

          @Override public void start() throws Exception {
            server.start();
          }

          @Override public void freeze() throws Exception {
            server.freeze();
          }

          @Override public void thaw() throws Exception {
            server.thaw();
          }
        }));
  }

  /** A fixture whose limiters start from {@code throughProxy}'s builders, and its clean ones from {@code direct}'s. */
  static Fixture fixture(FaultProxy proxy, Function<Policy, RedisRateLimiter.Builder> throughProxy,
                         Function<Policy, RedisRateLimiter.Builder> direct, Optional<Store> store) {
    return new Fixture() {
      @Override public FaultProxy proxy() {
        return proxy;
      }

      @Override public RateLimiter limiter(Setup s) {
        return throughProxy.apply(s.policy()).timeout(s.timeout()).failureMode(s.failureMode()).issuer(s.issuer())
            .maxBatch(s.coalescing() ? StoreRateLimiter.MAX_BATCH : 1).build();
      }

      @Override public RateLimiter direct(Policy policy) {
        return direct.apply(policy).timeout(Duration.ofSeconds(5)).build();
      }

      @Override public Optional<Store> store() {
        return store;
      }
    };
  }
}
