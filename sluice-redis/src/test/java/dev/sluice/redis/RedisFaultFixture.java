package dev.sluice.redis;

import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.spi.StoreRateLimiter;
import dev.sluice.tck.FaultContract.Fixture;
import dev.sluice.tck.FaultContract.Store;
import dev.sluice.tck.FaultProxy;
import java.time.Duration;
import java.util.Optional;
import java.util.function.Function;

/**
 * The fault kit's fixture for a Redis limiter on any client: its limiters start from a builder
 * connected through the kit's proxy, its clean ones from one connected straight to Redis. Public for
 * the other clients' modules, through the test-jar.
 */
public final class RedisFaultFixture {
  private RedisFaultFixture() {}

  /** A fixture whose limiters start from {@code throughProxy}'s builders, and its clean ones from {@code direct}'s. */
  public static Fixture of(FaultProxy proxy, Function<Policy, RedisRateLimiter.Builder> throughProxy,
                           Function<Policy, RedisRateLimiter.Builder> direct, Optional<Store> store) {
    return new Fixture() {
      @Override public FaultProxy proxy() {
        return proxy;
      }

      @Override public RateLimiter limiter(dev.sluice.tck.FaultContract.Setup s) {
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

  /** {@code server} as the kit's store: stopped, started, frozen and thawed by the cases. */
  public static Store store(RedisServerProcess server) {
    return new Store() {
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
    };
  }
}
