package dev.sluice.redis.jedis;

import java.net.URI;
import java.util.Map;
import java.util.Set;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.UnifiedJedis;

/** The Jedis clients the tests build, as docs/redis.md tells an application to. */
final class JedisClients {
  /** Jedis' socket timeout in the tests: several times the fault kit's 250 ms deadline. */
  static final int SOCKET_TIMEOUT_MILLIS = 1_000;

  private JedisClients() {}

  static JedisClientConfig config() {
    return DefaultJedisClientConfig.builder().socketTimeoutMillis(SOCKET_TIMEOUT_MILLIS).connectionTimeoutMillis(SOCKET_TIMEOUT_MILLIS)
        .build();
  }

  /** A standalone client (a pool of connections) to {@code uri}. */
  static UnifiedJedis standalone(String uri) {
    URI u = URI.create(uri);
    return RedisClient.builder().hostAndPort(u.getHost(), u.getPort()).clientConfig(config()).build();
  }

  /** A Cluster client seeded with {@code port}, sending each command once ({@code maxAttempts} 1). */
  static UnifiedJedis cluster(int port) {
    return cluster(port, Map.of());
  }

  /**
   * {@link #cluster(int)}, reaching each node the cluster announces on a port of {@code toPort}'s keys
   * on that key's value instead (a cluster behind the fault kit's proxy, reached past it).
   */
  static UnifiedJedis cluster(int port, Map<Integer, Integer> toPort) {
    JedisClientConfig c = DefaultJedisClientConfig.builder().socketTimeoutMillis(SOCKET_TIMEOUT_MILLIS)
        .connectionTimeoutMillis(SOCKET_TIMEOUT_MILLIS)
        .hostAndPortMapper(hp -> new HostAndPort(hp.getHost(), toPort.getOrDefault(hp.getPort(), hp.getPort()))).build();
    return RedisClusterClient.builder().nodes(Set.of(new HostAndPort("127.0.0.1", port))).maxAttempts(1).clientConfig(c).build();
  }
}
