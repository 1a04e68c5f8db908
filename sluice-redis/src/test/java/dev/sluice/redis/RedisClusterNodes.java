package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.tck.FaultProxy;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A three-master Redis Cluster on loopback, private to one test class: a {@link RedisServerProcess}
 * per port ({@code --cluster-enabled yes}), joined with {@code redis-cli --cluster create} and waited
 * for until every node says {@code cluster_state:ok}. Public for the other clients' modules, through
 * the test-jar. {@link #announceThrough} puts a started cluster behind the fault kit's proxy.
 */
public final class RedisClusterNodes {
  private RedisClusterNodes() {}

  /** Starts and joins the nodes; closing each one (in the caller's teardown) stops it. */
  public static List<RedisServerProcess> start(int... ports) throws Exception {
    List<RedisServerProcess> nodes = new ArrayList<>();
    try {
      for (int port : ports) {
        nodes.add(RedisServerProcess.start(port, "--cluster-enabled", "yes",
            "--cluster-config-file", "nodes-" + port + ".conf", "--cluster-node-timeout", "5000"));
      }
      join(ports);
    } catch (Exception | Error e) {
      for (RedisServerProcess n : nodes) {
        n.close(); // only what this call started
      }
      throw e;
    }
    return nodes;
  }

  private static void join(int... ports) throws Exception {
    List<String> create = new ArrayList<>(List.of("redis-cli", "--cluster", "create"));
    for (int port : ports) {
      create.add("127.0.0.1:" + port);
    }
    create.addAll(List.of("--cluster-replicas", "0", "--cluster-yes"));
    String out = RedisServerProcess.output(create.toArray(String[]::new));
    assertThat(out).as("redis-cli --cluster create").contains("All 16384 slots covered");
    long deadline = System.nanoTime() + 20_000_000_000L;
    for (int port : ports) {
      while (!RedisServerProcess.output("redis-cli", "-p", Integer.toString(port), "cluster", "info").contains("cluster_state:ok")) {
        assertThat(System.nanoTime()).as("cluster node %d reaches state ok", port).isLessThan(deadline);
        Thread.sleep(50); // poll the gossip
      }
    }
  }

  /**
   * Makes each node of a started cluster announce its port on {@code proxy} (one proxy port per node,
   * {@code FaultProxy.toLoopback(ports)}) as {@code cluster-announce-port}, the bus staying direct so
   * that faults never split the cluster, and waits until every node is ok and its {@code CLUSTER SLOTS}
   * names every proxy port: a client then reaches every node, redirects included, through the proxy.
   * Returns each proxy port's node port, for a client that must bypass the proxy.
   */
  public static Map<Integer, Integer> announceThrough(FaultProxy proxy, int... ports) throws Exception {
    Map<Integer, Integer> toNode = new HashMap<>();
    for (int port : ports) {
      toNode.put(proxy.portFor(port), port);
      String p = Integer.toString(port);
      RedisServerProcess.output("redis-cli", "-p", p, "config", "set", "cluster-announce-bus-port", Integer.toString(port + 10_000));
      RedisServerProcess.output("redis-cli", "-p", p, "config", "set", "cluster-announce-port", Integer.toString(proxy.portFor(port)));
    }
    long deadline = System.nanoTime() + 20_000_000_000L;
    for (int port : ports) {
      String p = Integer.toString(port);
      while (!RedisServerProcess.output("redis-cli", "-p", p, "cluster", "info").contains("cluster_state:ok")
          || !announcesEvery(RedisServerProcess.output("redis-cli", "-p", p, "cluster", "slots"), toNode.keySet())) {
        assertThat(System.nanoTime()).as("node %d: state ok, every proxy port announced", port).isLessThan(deadline);
        Thread.sleep(50); // poll the gossip
      }
    }
    return toNode;
  }

  private static boolean announcesEvery(String slots, Iterable<Integer> proxyPorts) {
    for (int port : proxyPorts) {
      if (slots.lines().noneMatch(l -> l.trim().equals(Integer.toString(port)))) {
        return false;
      }
    }
    return true;
  }
}
