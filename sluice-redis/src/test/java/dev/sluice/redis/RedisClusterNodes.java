package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;

/**
 * A three-master Redis Cluster on loopback, private to one test class: a {@link RedisServerProcess}
 * per port ({@code --cluster-enabled yes}), joined with {@code redis-cli --cluster create} and waited
 * for until every node says {@code cluster_state:ok}. Public for the other clients' modules, through
 * the test-jar.
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
}
