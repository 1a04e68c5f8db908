package dev.sluice.redis.jedis;

import dev.sluice.redis.RedisClusterNodes;
import dev.sluice.redis.RedisFaultFixture;
import dev.sluice.redis.RedisRateLimiter;
import dev.sluice.redis.RedisServerProcess;
import dev.sluice.tck.FaultContract;
import dev.sluice.tck.FaultProxy;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import redis.clients.jedis.UnifiedJedis;

/**
 * The fault kit on Jedis against a three-master Redis Cluster this test starts on ports 7314-7316, each
 * node behind its own port of one kit proxy ({@link RedisClusterNodes#announceThrough}, as Lettuce's
 * {@code RedisClusterFaultKitTest}): a {@code RedisClusterClient} built with {@code maxAttempts} 1 (so
 * that a script is sent at most once, docs/redis.md) and a 1 s socket timeout reaches every node
 * through the proxy; the clean client maps the proxy ports back to the nodes' own. The store-level
 * faults (SIGSTOP, restart) are not run: the kit's {@code Store} is one server, and the proxy's black
 * hole and refusal already take every node away at once.
 */
class JedisClusterFaultKitTest extends FaultContract {
  static final int[] PORTS = {7314, 7315, 7316};
  private static final List<RedisServerProcess> NODES = new ArrayList<>();
  private static FaultProxy proxy;
  private static UnifiedJedis throughProxy;
  private static UnifiedJedis direct;
  private static JedisTransport viaProxy;
  private static JedisTransport straight;

  @BeforeAll static void startCluster() throws Exception {
    NODES.addAll(RedisClusterNodes.start(PORTS));
    proxy = FaultProxy.toLoopback(PORTS);
    Map<Integer, Integer> toNode = RedisClusterNodes.announceThrough(proxy, PORTS);
    throughProxy = JedisClients.cluster(proxy.portFor(PORTS[0]));
    direct = JedisClients.cluster(PORTS[0], toNode);
    viaProxy = JedisTransport.of(throughProxy);
    straight = JedisTransport.of(direct);
  }

  @AfterAll static void stopCluster() throws Exception {
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
    for (RedisServerProcess n : NODES) {
      n.close();
    }
    NODES.clear();
  }

  @Override protected Fixture fixture() {
    return RedisFaultFixture.of(proxy, p -> RedisRateLimiter.builder(p, viaProxy), p -> RedisRateLimiter.builder(p, straight),
        Optional.empty());
  }
}
