package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

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
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The fault kit against a three-master Redis Cluster this test starts on ports 7204-7206, each node
 * behind its own port of one kit proxy: after {@code redis-cli --cluster create} every node announces
 * its proxy port ({@code cluster-announce-port}; the bus stays direct, so faults never split the
 * cluster), so the topology Lettuce reads sends every connection, redirects included, through the
 * proxy. The clean client maps the proxy ports back to the nodes' own.
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
    for (int port : PORTS) {
      NODES.add(RedisServerProcess.start(port, "--cluster-enabled", "yes", "--cluster-config-file", "nodes-" + port + ".conf",
          "--cluster-node-timeout", "5000"));
    }
    List<String> create = new ArrayList<>(List.of("redis-cli", "--cluster", "create"));
    for (int port : PORTS) {
      create.add("127.0.0.1:" + port);
    }
    create.addAll(List.of("--cluster-replicas", "0", "--cluster-yes"));
    assertThat(RedisServerProcess.output(create.toArray(String[]::new))).contains("All 16384 slots covered");
    proxy = FaultProxy.toLoopback(PORTS);
    Map<Integer, Integer> toNode = new HashMap<>();
    for (int port : PORTS) {
      toNode.put(proxy.portFor(port), port);
      String p = Integer.toString(port);
      RedisServerProcess.output("redis-cli", "-p", p, "config", "set", "cluster-announce-bus-port", Integer.toString(port + 10_000));
      RedisServerProcess.output("redis-cli", "-p", p, "config", "set", "cluster-announce-port", Integer.toString(proxy.portFor(port)));
    }
    long deadline = System.nanoTime() + 20_000_000_000L;
    for (int port : PORTS) {
      String p = Integer.toString(port);
      while (!RedisServerProcess.output("redis-cli", "-p", p, "cluster", "info").contains("cluster_state:ok")
          || !announcesEveryProxyPort(RedisServerProcess.output("redis-cli", "-p", p, "cluster", "slots"))) {
        assertThat(System.nanoTime()).as("node %d: state ok, every proxy port announced", port).isLessThan(deadline);
        Thread.sleep(50); // poll the gossip
      }
    }
    ClusterClientOptions rejecting = ClusterClientOptions.builder()
        .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS).build();
    throughProxy = RedisClusterClient.create(RedisURI.create(proxy.host(), proxy.portFor(PORTS[0])));
    throughProxy.setOptions(rejecting);
    Function<HostAndPort, HostAndPort> toNodePort = hp -> HostAndPort.of(hp.getHostText(),
        toNode.getOrDefault(hp.getPort(), hp.getPort()));
    directResources = ClientResources.builder().socketAddressResolver(MappingSocketAddressResolver.create(toNodePort)).build();
    direct = RedisClusterClient.create(directResources, RedisURI.create("127.0.0.1", PORTS[0]));
  }

  private static boolean announcesEveryProxyPort(String slots) {
    for (int port : PORTS) {
      if (!slots.lines().anyMatch(l -> l.trim().equals(Integer.toString(proxy.portFor(port))))) {
        return false;
      }
    }
    return true;
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
