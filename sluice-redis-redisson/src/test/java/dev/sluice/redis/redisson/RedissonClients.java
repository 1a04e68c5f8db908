package dev.sluice.redis.redisson;

import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/** The Redisson clients the tests build. */
final class RedissonClients {
  /** Redisson's response and connect timeouts in the tests: several times the fault kit's 250 ms deadline. */
  static final int TIMEOUT_MILLIS = 1_000;

  private RedissonClients() {}

  /** A single-server client to {@code uri}. */
  static RedissonClient standalone(String uri) {
    Config c = new Config();
    c.useSingleServer().setAddress(uri).setTimeout(TIMEOUT_MILLIS).setConnectTimeout(TIMEOUT_MILLIS)
        .setConnectionMinimumIdleSize(2).setConnectionPoolSize(16);
    return Redisson.create(c);
  }

  /** A Cluster client seeded with {@code port}. */
  static RedissonClient cluster(int port) {
    Config c = new Config();
    c.useClusterServers().addNodeAddress("redis://127.0.0.1:" + port).setTimeout(TIMEOUT_MILLIS)
        .setConnectTimeout(TIMEOUT_MILLIS).setMasterConnectionMinimumIdleSize(2);
    return Redisson.create(c);
  }
}
