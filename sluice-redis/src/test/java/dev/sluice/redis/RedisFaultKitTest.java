package dev.sluice.redis;

import dev.sluice.tck.FaultContract;
import dev.sluice.tck.FaultProxy;
import io.lettuce.core.RedisClient;
import java.time.Duration;
import java.util.Optional;
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
    return RedisFaultFixture.of(proxy, p -> RedisRateLimiter.builder(p, throughProxy), p -> RedisRateLimiter.builder(p, direct),
        Optional.of(RedisFaultFixture.store(server)));
  }
}
