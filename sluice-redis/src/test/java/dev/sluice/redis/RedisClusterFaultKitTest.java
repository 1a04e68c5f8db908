package dev.sluice.redis;

import dev.sluice.tck.FaultContract;
import dev.sluice.tck.FaultProxy;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.internal.HostAndPort;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.MappingSocketAddressResolver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The fault kit against a three-master Redis Cluster this test starts on ports 7204-7206, each node
 * behind its own port of one kit proxy ({@link RedisClusterNodes#announceThrough}: every node announces
 * its proxy port, the bus stays direct, so faults never split the cluster), so the topology Lettuce
 * reads sends every connection, redirects included, through the proxy. The clean client maps the
 * proxy ports back to the nodes' own.
 *
 * <p>Lettuce's Cluster client sends a command again after a reconnect whatever the limiter completes,
 * so on a Cluster a script is sent at most once only with {@code disconnectedBehavior(REJECT_COMMANDS)}
 * ({@code docs/redis.md}): the client here is built so, as the docs tell an application to. The
 * store-level faults (SIGSTOP, restart) are not run: the kit's {@code Store} is one server, and the
 * proxy's black hole and refusal already take every node away at once.
 */
class RedisClusterFaultKitTest extends FaultContract {
  static final int[] PORTS = {7204, 7205, 7206};
  private static final List<RedisServerProcess> NODES = new ArrayList<>();
  private static FaultProxy proxy;
  private static RedisClusterClient throughProxy;
  private static RedisClusterClient direct;
  private static ClientResources directResources;

  @BeforeAll static void startCluster() throws Exception {
    NODES.addAll(RedisClusterNodes.start(PORTS));
    proxy = FaultProxy.toLoopback(PORTS);
    Map<Integer, Integer> toNode = RedisClusterNodes.announceThrough(proxy, PORTS);
    ClusterClientOptions rejecting = ClusterClientOptions.builder()
        .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS).build();
    throughProxy = RedisClusterClient.create(RedisURI.create(proxy.host(), proxy.portFor(PORTS[0])));
    throughProxy.setOptions(rejecting);
    Function<HostAndPort, HostAndPort> toNodePort = hp -> HostAndPort.of(hp.getHostText(),
        toNode.getOrDefault(hp.getPort(), hp.getPort()));
    directResources = ClientResources.builder().socketAddressResolver(MappingSocketAddressResolver.create(toNodePort)).build();
    direct = RedisClusterClient.create(directResources, RedisURI.create("127.0.0.1", PORTS[0]));
  }

  @AfterAll static void stopCluster() throws Exception {
    for (RedisClusterClient c : new RedisClusterClient[] {throughProxy, direct}) {
      if (c != null) {
        c.shutdown(Duration.ZERO, Duration.ofSeconds(1));
      }
    }
    if (directResources != null) {
      directResources.shutdown();
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
    return RedisFaultFixture.of(proxy, p -> RedisRateLimiter.builder(p, throughProxy),
        p -> RedisRateLimiter.builder(p, direct), Optional.empty());
  }
}
