package dev.sluice.hazelcast;

import com.hazelcast.client.HazelcastClient;
import com.hazelcast.client.config.ClientConfig;
import com.hazelcast.client.config.ClientConnectionStrategyConfig;
import com.hazelcast.config.AdvancedNetworkConfig;
import com.hazelcast.config.JoinConfig;
import com.hazelcast.config.ServerSocketEndpointConfig;
import com.hazelcast.core.HazelcastInstance;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.tck.FaultContract;
import dev.sluice.tck.FaultProxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The fault kit against a three-member cluster on loopback, reached by a client through the kit's
 * proxy: each member has a client endpoint of its own (advanced network) that announces its proxy
 * port as its public address, while the members talk to each other directly, so a fault never
 * splits the cluster and every connection of the client, to every member, goes through the proxy.
 * The client runs as {@code docs/hazelcast.md} tells an application to: reconnect mode {@code ASYNC}
 * (a call while disconnected fails at once, certainly not sent), a short reconnect backoff, and
 * backups acknowledging to the owner rather than to the client. The
 * clean limiter reads budgets on a member. The store-level faults (SIGSTOP, restart) are not run: the
 * kit's {@code Store} is one server process, and the members live in this JVM; the proxy's black hole
 * and refusal take every member away at once.
 */
class HazelcastFaultKitTest extends FaultContract {
  private static final int MEMBER_PORT = 5861;
  private static final int[] CLIENT_PORTS = {5871, 5872, 5873};
  private static FaultProxy proxy;
  private static Cluster cluster;
  private static final List<HazelcastInstance> clients = new ArrayList<>();

  @BeforeAll static void startCluster() throws Exception {
    proxy = FaultProxy.toLoopback(CLIENT_PORTS);
    cluster = Cluster.empty(MEMBER_PORT, 3);
    for (int port : CLIENT_PORTS) {
      cluster.addMember(null, c -> {
        AdvancedNetworkConfig net = c.getAdvancedNetworkConfig().setEnabled(true);
        ServerSocketEndpointConfig member = new ServerSocketEndpointConfig();
        member.setPort(MEMBER_PORT).setPortCount(3).setPortAutoIncrement(true);
        member.getInterfaces().setEnabled(true).addInterface("127.0.0.1");
        net.setMemberEndpointConfig(member);
        ServerSocketEndpointConfig client = new ServerSocketEndpointConfig();
        client.setPort(port).setPortAutoIncrement(false).setPublicAddress("127.0.0.1:" + proxy.portFor(port));
        client.getInterfaces().setEnabled(true).addInterface("127.0.0.1");
        net.setClientEndpointConfig(client);
        JoinConfig join = net.getJoin();
        join.getMulticastConfig().setEnabled(false);
        join.getAutoDetectionConfig().setEnabled(false);
        join.getTcpIpConfig().setEnabled(true);
        for (int p = MEMBER_PORT; p < MEMBER_PORT + 3; p++) {
          join.getTcpIpConfig().addMember("127.0.0.1:" + p);
        }
      });
    }
    cluster.awaitSize(3);
  }

  @AfterAll static void stopCluster() {
    clients.forEach(HazelcastInstance::shutdown);
    cluster.close();
    proxy.close();
  }

  /** A client through the proxy, failing calls at once while disconnected and reconnecting every 10 to 50 ms. */
  private static synchronized HazelcastInstance client() {
    if (clients.isEmpty()) {
      ClientConfig c = new ClientConfig();
      c.setClusterName(cluster.name());
      c.setProperty("hazelcast.logging.type", "none");
      c.setProperty("hazelcast.phone.home.enabled", "false");
      c.setBackupAckToClientEnabled(false); // as docs/hazelcast.md tells a client to
      c.getNetworkConfig().addAddress("127.0.0.1:" + proxy.portFor(CLIENT_PORTS[0]));
      ClientConnectionStrategyConfig s = c.getConnectionStrategyConfig();
      s.setReconnectMode(ClientConnectionStrategyConfig.ReconnectMode.ASYNC);
      s.getConnectionRetryConfig().setInitialBackoffMillis(10).setMaxBackoffMillis(50).setMultiplier(1.5)
          .setClusterConnectTimeoutMillis(-1);
      clients.add(HazelcastClient.newHazelcastClient(c));
    }
    return clients.get(0);
  }

  /**
   * 300 ms, not 100 ms: the client reopens its connection to the member it lost on its retry backoff
   * (10 to 50 ms here), but an invocation that meets a member not yet reconnected can go through
   * another member and be retried by Hazelcast. Measured over three runs at load 10 to 12 on 2 cores:
   * every worker back within 28 to 63 ms after {@code CLOSED}, 28 to 170 ms after {@code REFUSED}, 6
   * to 21 ms after a black hole. (With backup acknowledgements sent to the client, Hazelcast's
   * default, a write waited for the client to reconnect to its backup member too, by a task run about
   * once a second: 384 to 1,060 ms.)
   */
  @Override protected Duration recoveryBound() {
    return Duration.ofMillis(300);
  }

  @Override protected Fixture fixture() {
    return new Fixture() {
      @Override public FaultProxy proxy() {
        return proxy;
      }

      @Override public RateLimiter limiter(Setup s) {
        return HazelcastRateLimiter.builder(s.policy(), client()).timeout(s.timeout()).failureMode(s.failureMode())
            .issuer(s.issuer()).maxBatch(s.coalescing() ? dev.sluice.spi.StoreRateLimiter.MAX_BATCH : 1).build();
      }

      @Override public RateLimiter direct(Policy policy) {
        return HazelcastRateLimiter.builder(policy, cluster.member(0)).timeout(Duration.ofSeconds(5)).build();
      }
    };
  }
}
