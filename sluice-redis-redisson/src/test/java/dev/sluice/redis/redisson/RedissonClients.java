package dev.sluice.redis.redisson;

import java.time.Duration;
import java.util.Map;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.redisson.config.ConstantDelay;
import org.redisson.misc.RedisURI;

/** The Redisson clients the tests build. */
final class RedissonClients {
  /** Redisson's response and connect timeouts in the tests: several times the fault kit's 250 ms deadline. */
  static final int TIMEOUT_MILLIS = 1_000;
  /**
   * Between reconnection attempts after a drop: Redisson's default (50-100 ms, doubling up to 10 s)
   * kept the fault kit's keys off the store 146-165 ms after a refusal ended, past its 100 ms bound.
   */
  static final ConstantDelay RECONNECT = new ConstantDelay(Duration.ofMillis(10));

  private RedissonClients() {}

  /** A single-server client to {@code uri}. */
  static RedissonClient standalone(String uri) {
    Config c = new Config();
    c.useSingleServer().setAddress(uri).setTimeout(TIMEOUT_MILLIS).setConnectTimeout(TIMEOUT_MILLIS)
        .setConnectionMinimumIdleSize(2).setConnectionPoolSize(16)
        .setReconnectionDelay(RECONNECT);
    return Redisson.create(c);
  }

  /** A Cluster client seeded with {@code port}. */
  static RedissonClient cluster(int port) {
    return cluster(port, Map.of());
  }

  /**
   * {@link #cluster(int)}, reaching each node the cluster announces on a port of {@code toPort}'s keys
   * on that key's value instead (a cluster behind the fault kit's proxy, reached past it).
   */
  static RedissonClient cluster(int port, Map<Integer, Integer> toPort) {
    Config c = new Config();
    c.useClusterServers().addNodeAddress("redis://127.0.0.1:" + port).setTimeout(TIMEOUT_MILLIS)
        .setConnectTimeout(TIMEOUT_MILLIS).setMasterConnectionMinimumIdleSize(2).setReconnectionDelay(RECONNECT)
        .setNatMapper(uri -> toPort.containsKey(uri.getPort()) ? new RedisURI(uri.getScheme(), uri.getHost(), toPort.get(uri.getPort())) : uri);
    return Redisson.create(c);
  }
}
