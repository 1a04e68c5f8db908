package dev.sluice.redis.redisson;

import dev.sluice.redis.RedisClusterNodes;
import dev.sluice.redis.RedisFaultFixture;
import dev.sluice.redis.RedisRateLimiter;
import dev.sluice.redis.RedisServerProcess;
import dev.sluice.tck.FaultContract;
import dev.sluice.tck.FaultProxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.redisson.api.RedissonClient;

/**
 * The fault kit on Redisson against a three-master Redis Cluster this test starts on ports 7414-7416,
 * each node behind its own port of one kit proxy ({@link RedisClusterNodes#announceThrough}, as
 * Lettuce's {@code RedisClusterFaultKitTest}): a cluster-servers client with a 1 s response timeout
 * reaches every node through the proxy; the clean client maps the proxy ports back to the nodes' own
 * (Redisson's {@code natMapper}). The store-level faults (SIGSTOP, restart) are not run: the kit's
 * {@code Store} is one server, and the proxy's black hole and refusal already take every node away at once.
 */
class RedissonClusterFaultKitTest extends FaultContract {
  static final int[] PORTS = {7414, 7415, 7416};
  private static final List<RedisServerProcess> NODES = new ArrayList<>();
  private static FaultProxy proxy;
  private static RedissonClient throughProxy;
  private static RedissonClient direct;
  private static RedissonTransport viaProxy;
  private static RedissonTransport straight;

  @BeforeAll static void startCluster() throws Exception {
    NODES.addAll(RedisClusterNodes.start(PORTS));
    proxy = FaultProxy.toLoopback(PORTS);
    Map<Integer, Integer> toNode = RedisClusterNodes.announceThrough(proxy, PORTS);
    throughProxy = RedissonClients.cluster(proxy.portFor(PORTS[0]));
    direct = RedissonClients.cluster(PORTS[0], toNode);
    viaProxy = RedissonTransport.of(throughProxy);
    straight = RedissonTransport.of(direct);
  }

  @AfterAll static void stopCluster() throws Exception {
    for (RedissonTransport t : new RedissonTransport[] {viaProxy, straight}) {
      if (t != null) {
        t.close();
      }
    }
    for (RedissonClient r : new RedissonClient[] {throughProxy, direct}) {
      if (r != null) {
        r.shutdown();
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

  /** Redisson's own reconnection, as on standalone ({@link RedissonFaultKitTest#recoveryBound()}). */
  @Override protected Duration recoveryBound() {
    return Duration.ofMillis(500);
  }

  @Override protected Fixture fixture() {
    return RedisFaultFixture.of(proxy, p -> RedisRateLimiter.builder(p, viaProxy), p -> RedisRateLimiter.builder(p, straight),
        Optional.empty());
  }
}
