package dev.sluice.hazelcast;

import com.hazelcast.client.HazelcastClient;
import com.hazelcast.client.config.ClientConfig;
import com.hazelcast.client.config.ClientConnectionStrategyConfig;
import com.hazelcast.config.Config;
import com.hazelcast.config.JoinConfig;
import com.hazelcast.config.NetworkConfig;
import com.hazelcast.core.Hazelcast;
import com.hazelcast.core.HazelcastInstance;
import dev.sluice.Ticker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * Hazelcast members in this JVM, on loopback only: bound to 127.0.0.1, joined by TCP-IP to a small
 * port range there, multicast and auto-detection off, a cluster name of its own, no phone-home. A
 * member may be given its own clock (the user context's {@link HazelcastRateLimiter#MEMBER_CLOCK}).
 */
final class Cluster implements AutoCloseable {
  private final String name = "sluice-test-" + UUID.randomUUID();
  private final int basePort;
  private final int maxMembers;
  private final List<HazelcastInstance> members = new ArrayList<>();
  private final List<HazelcastInstance> clients = new ArrayList<>();

  private Cluster(int basePort, int maxMembers) {
    this.basePort = basePort;
    this.maxMembers = maxMembers;
  }

  /** Members to come on ports from {@code basePort} ({@link #addMember}), at most {@code maxMembers}. */
  static Cluster empty(int basePort, int maxMembers) {
    return new Cluster(basePort, maxMembers);
  }

  int basePort() {
    return basePort;
  }

  int maxMembers() {
    return maxMembers;
  }

  /** {@code n} members on ports from {@code basePort}, joined into one cluster before this returns. */
  static Cluster start(int basePort, int n) {
    Cluster c = new Cluster(basePort, n + 2);
    for (int i = 0; i < n; i++) {
      c.addMember(null);
    }
    c.awaitSize(n);
    return c;
  }

  /** One more member, deciding on {@code clock} (null: its system clock). */
  HazelcastInstance addMember(Ticker clock) {
    return addMember(clock, c -> {});
  }

  /** One more member, deciding on {@code clock}, its configuration changed by {@code custom} last. */
  HazelcastInstance addMember(Ticker clock, java.util.function.Consumer<Config> custom) {
    Config c = new Config();
    c.setClusterName(name);
    c.setProperty("hazelcast.phone.home.enabled", "false");
    c.setProperty("hazelcast.logging.type", "none");
    c.setProperty("hazelcast.partition.count", "31");
    c.setProperty("hazelcast.wait.seconds.before.join", "0");
    c.setProperty("hazelcast.max.wait.seconds.before.join", "0");
    c.setProperty("hazelcast.heartbeat.interval.seconds", "1");
    c.setProperty("hazelcast.max.no.heartbeat.seconds", "5");
    c.setProperty("hazelcast.shutdownhook.enabled", "false");
    c.setProperty("hazelcast.health.monitoring.level", "OFF");
    c.setProperty("hazelcast.socket.bind.any", "false");
    NetworkConfig net = c.getNetworkConfig();
    net.setPort(basePort).setPortCount(maxMembers).setPortAutoIncrement(true);
    net.getInterfaces().setEnabled(true).addInterface("127.0.0.1");
    JoinConfig join = net.getJoin();
    join.getMulticastConfig().setEnabled(false);
    join.getAutoDetectionConfig().setEnabled(false);
    join.getTcpIpConfig().setEnabled(true);
    for (int p = basePort; p < basePort + maxMembers; p++) {
      join.getTcpIpConfig().addMember("127.0.0.1:" + p);
    }
    ConcurrentHashMap<String, Object> context = new ConcurrentHashMap<>();
    if (clock != null) {
      context.put(HazelcastRateLimiter.MEMBER_CLOCK, clock);
    }
    c.setUserContext(context);
    custom.accept(c);
    HazelcastInstance m = Hazelcast.newHazelcastInstance(c);
    synchronized (this) {
      members.add(m);
    }
    return m;
  }

  /** A client connected to every member (smart routing), failing calls at once while disconnected. */
  HazelcastInstance client() {
    ClientConfig c = new ClientConfig();
    c.setClusterName(name);
    c.setProperty("hazelcast.logging.type", "none");
    c.setProperty("hazelcast.phone.home.enabled", "false");
    c.setBackupAckToClientEnabled(false); // as docs/hazelcast.md tells a client to
    for (int p = basePort; p < basePort + maxMembers; p++) {
      c.getNetworkConfig().addAddress("127.0.0.1:" + p);
    }
    c.getConnectionStrategyConfig().setReconnectMode(ClientConnectionStrategyConfig.ReconnectMode.ASYNC);
    HazelcastInstance client = HazelcastClient.newHazelcastClient(c);
    synchronized (this) {
      clients.add(client);
    }
    return client;
  }

  String name() {
    return name;
  }

  synchronized HazelcastInstance member(int i) {
    return members.get(i);
  }

  synchronized List<HazelcastInstance> members() {
    return List.copyOf(members);
  }

  /** Kills member {@code i} as a crash would: no graceful migration, its partitions lost but for their backups. */
  void terminate(HazelcastInstance m) {
    m.getLifecycleService().terminate();
  }

  /** Waits (polling, at most 60 s) until every running member sees {@code n} members and the partitions are safe. */
  void awaitSize(int n) {
    boolean ok = await(Duration.ofSeconds(60), () -> members().stream().filter(m -> m.getLifecycleService().isRunning())
        .allMatch(m -> m.getCluster().getMembers().size() == n && m.getPartitionService().isClusterSafe()));
    if (!ok) {
      throw new IllegalStateException("the cluster did not reach " + n + " members with safe partitions in 60 s");
    }
  }

  static boolean await(Duration limit, BooleanSupplier condition) {
    long end = System.nanoTime() + limit.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - end > 0) {
        return false;
      }
      LockSupport.parkNanos(10_000_000);
    }
    return true;
  }

  @Override public synchronized void close() {
    clients.forEach(c -> c.shutdown());
    members.forEach(m -> m.getLifecycleService().terminate());
    clients.clear();
    members.clear();
  }
}
