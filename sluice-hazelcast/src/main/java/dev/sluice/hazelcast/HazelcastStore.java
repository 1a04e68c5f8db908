package dev.sluice.hazelcast;

import com.hazelcast.client.HazelcastClient;
import com.hazelcast.client.config.ClientConfig;
import com.hazelcast.client.config.ClientConnectionStrategyConfig;
import com.hazelcast.core.HazelcastInstance;
import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.kernel.Store;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * Counts in a Hazelcast cluster ({@code sluice-hazelcast}), for the kernel's front ends: a
 * {@link HazelcastRateLimiter} per policy on one instance, time from the owner members' clocks, so
 * every instance shares one budget per key. {@link #fromUrl} opens a client of its own;
 * {@link #onInstance} uses the application's member or client. A cluster that cannot be reached does
 * not stop the store from opening: decisions follow the failure mode until it answers.
 */
public final class HazelcastStore extends Store {
  private static final Duration DEFAULT_PROBE_TIMEOUT = Duration.ofSeconds(1);

  private final String where;
  private final HazelcastInstance hazelcast;
  private final boolean owned;
  private final String map;
  private final Function<Policy, FailureMode> failureModes;
  private final Duration timeout;
  private final List<HazelcastRateLimiter> limiters = new CopyOnWriteArrayList<>();

  private HazelcastStore(String where, HazelcastInstance hazelcast, boolean owned, String map,
      Function<Policy, FailureMode> failureModes, Duration timeout) {
    this.where = where;
    this.hazelcast = hazelcast;
    this.owned = owned;
    this.map = map;
    this.failureModes = failureModes;
    this.timeout = timeout;
  }

  /**
   * A client of its own, shut down by {@link #close()}, on {@code url}:
   * {@code hazelcast://host:port[,host:port...][/cluster-name][?map=name]} (cluster name {@code dev}
   * and map {@link HazelcastRateLimiter#DEFAULT_MAP} unless given). The client starts without waiting
   * for the cluster and, while disconnected, fails calls at once (reconnect mode {@code ASYNC}), so a
   * decision then follows the failure mode instead of waiting; backups acknowledge to the owner, not
   * the client. {@code timeout} null keeps the limiter's default.
   */
  public static HazelcastStore fromUrl(String url, Function<Policy, FailureMode> failureModes, Duration timeout) {
    Url u = Url.parse(url);
    ClientConfig config = new ClientConfig();
    config.setClusterName(u.cluster);
    config.getNetworkConfig().setAddresses(u.addresses);
    config.getConnectionStrategyConfig().setAsyncStart(true)
        .setReconnectMode(ClientConnectionStrategyConfig.ReconnectMode.ASYNC);
    // The owner replies once its backups acknowledged, instead of the backups acknowledging to the client
    // directly: a client not (yet) connected to a backup member would otherwise wait out the backup
    // timeout (5 s) on every write whose backup is there (docs/hazelcast.md, "Setup").
    config.setBackupAckToClientEnabled(false);
    HazelcastInstance client = HazelcastClient.newHazelcastClient(config);
    return new HazelcastStore(url, client, true, u.map, failureModes, timeout);
  }

  /**
   * On an application's member or client ({@code owned}: whether {@link #close()} shuts it down),
   * budgets in {@code map}; {@code timeout} null keeps the limiter's default.
   */
  public static HazelcastStore onInstance(HazelcastInstance hazelcast, boolean owned, String map,
      Function<Policy, FailureMode> failureModes, Duration timeout) {
    return new HazelcastStore("the application's instance " + hazelcast.getName(), hazelcast, owned, map, failureModes,
        timeout);
  }

  @Override public String name() { return "hazelcast"; }

  @Override public String describe() {
    return "Hazelcast at " + where + ", map " + map + " (shared by every instance; the members need Sluice's classes)";
  }

  @Override public boolean shared() { return true; }

  @Override public RateLimiter limiter(Policy policy, RateLimitListener listener) {
    HazelcastRateLimiter.Builder b = HazelcastRateLimiter.builder(policy, hazelcast).map(map);
    if (timeout != null) {
      b.timeout(timeout);
    }
    HazelcastRateLimiter l = b.failureMode(failureModes.apply(policy)).issuer(issuer()).listener(listener, false).build();
    limiters.add(l);
    return l;
  }

  /** A read of an entry no budget uses (nothing decided, nothing counted), within the timeout. */
  @Override public String probe() {
    return probeAnswer(() -> hazelcast.getMap(map).getAsync("sluice-probe").toCompletableFuture()
        .get((timeout != null ? timeout : DEFAULT_PROBE_TIMEOUT).toNanos(), TimeUnit.NANOSECONDS));
  }

  @Override public void check(List<Policy> policies) {
    for (Policy p : policies) {
      HazelcastBackend.CAPABILITIES.require(p);
    }
  }

  @Override public void close() {
    limiters.forEach(HazelcastRateLimiter::close); // closes nothing of the instance's; never throws
    if (owned) {
      hazelcast.shutdown();
    }
  }

  /** A {@code hazelcast://} URL's parts. */
  record Url(List<String> addresses, String cluster, String map) {
    static Url parse(String url) {
      String prefix = "hazelcast://";
      if (url == null || !url.startsWith(prefix) || url.length() == prefix.length()) {
        throw new IllegalArgumentException(url + " is not a Hazelcast URL; write e.g. hazelcast://127.0.0.1:5701,127.0.0.1:5702/dev?map=sluice");
      }
      String rest = url.substring(prefix.length());
      String map = HazelcastRateLimiter.DEFAULT_MAP;
      int q = rest.indexOf('?');
      if (q >= 0) {
        String query = rest.substring(q + 1);
        rest = rest.substring(0, q);
        if (!query.startsWith("map=") || query.length() == 4 || query.contains("&")) {
          throw new IllegalArgumentException(url + ": the one query parameter is map=<name>");
        }
        map = query.substring(4);
      }
      int slash = rest.indexOf('/');
      String cluster = slash < 0 || slash == rest.length() - 1 ? "dev" : rest.substring(slash + 1);
      String hosts = slash < 0 ? rest : rest.substring(0, slash);
      if (hosts.isEmpty()) {
        throw new IllegalArgumentException(url + " names no member; write e.g. hazelcast://127.0.0.1:5701");
      }
      return new Url(List.of(hosts.split(",")), cluster, map);
    }
  }
}
