package dev.sluice.redis.redisson;

import dev.sluice.redis.RedisFaultFixture;
import dev.sluice.redis.RedisRateLimiter;
import dev.sluice.redis.RedisServerProcess;
import dev.sluice.tck.FaultContract;
import dev.sluice.tck.FaultProxy;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.redisson.api.RedissonClient;

/**
 * The fault kit on Redisson against standalone Redis: a private redis-server on port 7421 (the kit stops,
 * freezes and restarts it), reached through the kit's proxy by a client with a 1 s response timeout.
 */
class RedissonFaultKitTest extends FaultContract {
  static final int PORT = 7421;
  private static RedisServerProcess server;
  private static FaultProxy proxy;
  private static RedissonClient throughProxy;
  private static RedissonClient direct;
  private static RedissonTransport viaProxy;
  private static RedissonTransport straight;

  @BeforeAll static void start() throws Exception {
    server = RedisServerProcess.start(PORT);
    proxy = FaultProxy.toLoopback(PORT);
    throughProxy = RedissonClients.standalone("redis://" + proxy.host() + ":" + proxy.port());
    direct = RedissonClients.standalone(server.uri());
    viaProxy = RedissonTransport.of(throughProxy);
    straight = RedissonTransport.of(direct);
  }

  @AfterAll static void stop() throws Exception {
    for (RedissonTransport t : new RedissonTransport[] {viaProxy, straight}) {
      if (t != null) {
        t.close();
      }
    }
    for (RedissonClient j : new RedissonClient[] {throughProxy, direct}) {
      if (j != null) {
        j.shutdown();
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
    return RedisFaultFixture.of(proxy, p -> RedisRateLimiter.builder(p, viaProxy), p -> RedisRateLimiter.builder(p, straight),
        Optional.of(RedisFaultFixture.store(server)));
  }
}
