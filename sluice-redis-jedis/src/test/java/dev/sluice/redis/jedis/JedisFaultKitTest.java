package dev.sluice.redis.jedis;

import dev.sluice.redis.RedisFaultFixture;
import dev.sluice.redis.RedisRateLimiter;
import dev.sluice.redis.RedisServerProcess;
import dev.sluice.tck.FaultContract;
import dev.sluice.tck.FaultProxy;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import redis.clients.jedis.UnifiedJedis;

/**
 * The fault kit on Jedis against standalone Redis: a private redis-server on port 7321 (the kit stops,
 * freezes and restarts it), reached through the kit's proxy by a client with a 1 s socket timeout.
 */
class JedisFaultKitTest extends FaultContract {
  static final int PORT = 7321;
  private static RedisServerProcess server;
  private static FaultProxy proxy;
  private static UnifiedJedis throughProxy;
  private static UnifiedJedis direct;
  private static JedisTransport viaProxy;
  private static JedisTransport straight;

  @BeforeAll static void start() throws Exception {
    server = RedisServerProcess.start(PORT);
    proxy = FaultProxy.toLoopback(PORT);
    throughProxy = JedisClients.standalone("redis://" + proxy.host() + ":" + proxy.port());
    direct = JedisClients.standalone(server.uri());
    viaProxy = JedisTransport.of(throughProxy);
    straight = JedisTransport.of(direct);
  }

  @AfterAll static void stop() throws Exception {
    for (JedisTransport t : new JedisTransport[] {viaProxy, straight}) {
      if (t != null) {
        t.close();
      }
    }
    for (UnifiedJedis j : new UnifiedJedis[] {throughProxy, direct}) {
      if (j != null) {
        j.close();
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
