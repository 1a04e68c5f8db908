package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.kernel.Store;
import dev.sluice.redis.RedisRateLimiter;
import dev.sluice.redis.RedisClusterNodes;
import dev.sluice.redis.RedisServerProcess;
import dev.sluice.redis.SharedRedis;
import dev.sluice.springclients.ClientsApp;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.IOException;
import java.net.URI;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.jedis.JedisConnectionFactory;

/**
 * {@code sluice.store=redis} on the client the application already has, started for real on the shared
 * Redis ({@code SLUICE_REDIS_URL}), as {@link ClientsApp}: Spring Data Redis's Jedis connection factory,
 * then an application {@link RedissonClient} bean. Each decides (two instances share one budget, exactly its limit admitted
 * from 16 threads), and every connection this JVM opened to Redis while the application ran carries the
 * application client's name: Sluice made no client of its own ({@code sluice.redis.url} names a port
 * nothing listens on, in case it tried).
 */
class SluiceRedisClientsTest {
  private static final int REDIS_PORT = URI.create(SharedRedis.URL).getPort();

  private static final Class<?>[] NO_BEANS = {};

  /** {@link ClientsApp} on a random port with {@code beans} beside it and {@code properties}, as {@link Apps#startWith} does. */
  private static ConfigurableApplicationContext start(Class<?>[] beans, String... properties) {
    List<String> args = new ArrayList<>(List.of("--server.port=0"));
    for (String p : properties) {
      args.add("--" + p);
    }
    return new SpringApplicationBuilder(ClientsApp.class).sources(beans).run(args.toArray(new String[0]));
  }

  @BeforeAll static void sharedRedis() {
    SharedRedis.client();
  }

  @Test void springDataRedisOnJedisIsTheStoresClient() throws Exception {
    String name = "sluice-jedis-" + UUID.randomUUID();
    String[] props = {"sluice.store=redis", "sluice.timeout=2s", "spring.autoconfigure.exclude=" + RedisStoreTest.NO_DATABASE,
        "spring.data.redis.url=" + SharedRedis.URL, "spring.data.redis.client-type=jedis", "spring.data.redis.client-name=" + name,
        "sluice.redis.url=redis://127.0.0.1:7169"};
    Set<Integer> before = connectionsToRedis();
    try (ConfigurableApplicationContext a = start(NO_BEANS, props); ConfigurableApplicationContext b = start(NO_BEANS, props)) {
      for (ConfigurableApplicationContext app : new ConfigurableApplicationContext[] {a, b}) {
        assertThat(app.getBeansOfType(RedisConnectionFactory.class).values()).singleElement().isInstanceOf(JedisConnectionFactory.class);
        assertThat(app.getBean(Store.class).name()).isEqualTo("redis-jedis");
      }
      decidesOnRedis(a, b, "redis-jedis");
      assertOnlyNamedConnections(before, name);
    }
  }

  @Test void anApplicationsRedissonClientIsTheStoresClient() throws Exception {
    String name = "sluice-redisson-" + UUID.randomUUID();
    // No Spring Data Redis (application.yaml excludes it): the application's Redisson bean only.
    String[] props = {"sluice.store=redis", "sluice.timeout=2s", "test.redisson.client-name=" + name,
        "sluice.redis.url=redis://127.0.0.1:7169"};
    Set<Integer> before = connectionsToRedis();
    Class<?>[] beans = {RedissonBean.class};
    try (ConfigurableApplicationContext a = start(beans, props); ConfigurableApplicationContext b = start(beans, props)) {
      for (ConfigurableApplicationContext app : new ConfigurableApplicationContext[] {a, b}) {
        assertThat(app.getBeansOfType(RedisConnectionFactory.class)).isEmpty();
        assertThat(app.getBeansOfType(RedissonClient.class)).hasSize(1);
        assertThat(app.getBean(Store.class).name()).isEqualTo("redis-redisson");
      }
      decidesOnRedis(a, b, "redis-redisson");
      assertOnlyNamedConnections(before, name);
    }
  }

  /**
   * A RedissonClient bean beside Boot's Lettuce factory (spring-boot-starter-data-redis on the class path,
   * no client type chosen): the Redisson bean is the application's choice and is used.
   */
  @Test void aRedissonBeanComesBeforeBootsLettuceFactory() throws Exception {
    String name = "sluice-redisson-" + UUID.randomUUID();
    String[] props = {"sluice.store=redis", "sluice.timeout=2s", "spring.autoconfigure.exclude=" + RedisStoreTest.NO_DATABASE,
        "spring.data.redis.url=" + SharedRedis.URL, "test.redisson.client-name=" + name, "sluice.redis.url=redis://127.0.0.1:7169"};
    try (ConfigurableApplicationContext app = start(new Class<?>[] {RedissonBean.class}, props)) {
      assertThat(app.getBeansOfType(RedisConnectionFactory.class).values()).singleElement()
          .isInstanceOf(org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory.class);
      assertThat(app.getBean(Store.class).name()).isEqualTo("redis-redisson");
      String id = UUID.randomUUID().toString();
      assertThat(Apps.admitted(150, 429, () -> "/bulk", id, Apps.client(app))).isEqualTo(100);
    }
  }

  /** Spring Data Redis's Jedis factory on a three-master Cluster (private, ports 7317-7319): the factory's own JedisCluster. */
  @Test void aJedisClusterFactoryIsTheStoresClient() throws Exception {
    int[] ports = {7317, 7318, 7319};
    List<RedisServerProcess> nodes = RedisClusterNodes.start(ports);
    try {
      String[] props = {"sluice.store=redis", "sluice.timeout=2s", "spring.autoconfigure.exclude=" + RedisStoreTest.NO_DATABASE,
          "spring.data.redis.client-type=jedis", "spring.data.redis.cluster.nodes=127.0.0.1:" + ports[0],
          "sluice.redis.url=redis://127.0.0.1:7169"};
      try (ConfigurableApplicationContext app = start(NO_BEANS, props)) {
        assertThat(app.getBean(Store.class).name()).isEqualTo("redis-jedis");
        String id = UUID.randomUUID().toString();
        assertThat(Apps.admitted(150, 429, () -> "/bulk", id, Apps.client(app))).isEqualTo(100);
        assertThat(Apps.client(app).json("/actuator/health").at("/components/sluice/status").asText()).isEqualTo("UP");
      }
    } finally {
      for (RedisServerProcess n : nodes) {
        n.close();
      }
    }
  }

  /** The application's client: Redisson on the shared Redis, named so that its connections can be told apart. */
  static class RedissonBean {
    @Bean(destroyMethod = "shutdown")
    RedissonClient redisson(@Value("${test.redisson.client-name}") String name) {
      Config c = new Config();
      c.useSingleServer().setAddress(SharedRedis.URL).setClientName(name).setConnectionMinimumIdleSize(2).setConnectionPoolSize(16);
      return Redisson.create(c);
    }
  }

  private static void decidesOnRedis(ConfigurableApplicationContext a, ConfigurableApplicationContext b, String store) throws Exception {
    String id = UUID.randomUUID().toString();
    assertThat(a.getBean(RateLimiterRegistry.class).limiter("bulk")).isInstanceOf(RedisRateLimiter.class);
    Client ca = Apps.client(a);
    Client cb = Apps.client(b);
    assertThat(Apps.admitted(300, 429, () -> "/bulk", id, ca, cb)).isEqualTo(100);
    assertThat(cb.get("/bulk", "X-Client", id).statusCode()).isEqualTo(429);
    assertThat(ca.get("/bulk", "X-Client", id + "-other").statusCode()).isEqualTo(200);
    assertThat(ca.json("/actuator/ratelimits").get("store").asText()).isEqualTo(store);
    JsonNode health = cb.json("/actuator/health");
    assertThat(health.at("/components/sluice/status").asText()).isEqualTo("UP");
    assertThat(health.at("/components/sluice/details/store").asText()).isEqualTo(store);
  }

  /**
   * Every connection this JVM holds to Redis now and did not before the applications started is one
   * the server knows by {@code name}: the application's client's, none of a client Sluice made.
   */
  private static void assertOnlyNamedConnections(Set<Integer> before, String name) throws IOException {
    Set<Integer> opened = connectionsToRedis();
    opened.removeAll(before);
    Map<Integer, String> names = new HashMap<>();
    StatefulRedisConnection<String, String> admin = SharedRedis.client().connect();
    try {
      for (String line : admin.sync().clientList().split("\n")) {
        Map<String, String> f = new HashMap<>();
        for (String kv : line.trim().split(" ")) {
          int eq = kv.indexOf('=');
          if (eq > 0) {
            f.put(kv.substring(0, eq), kv.substring(eq + 1));
          }
        }
        String addr = f.getOrDefault("addr", "");
        if (addr.startsWith("127.0.0.1:")) {
          names.put(Integer.parseInt(addr.substring(addr.lastIndexOf(':') + 1)), f.getOrDefault("name", ""));
        }
      }
    } finally {
      admin.close();
    }
    assertThat(opened).as("connections the applications opened").isNotEmpty();
    for (int port : opened) {
      if (names.containsKey(port)) { // a connection closed since the snapshot is not listed
        assertThat(names.get(port)).as("name of the connection from local port %d", port).isEqualTo(name);
      }
    }
    assertThat(opened).as("connections known to the server").anyMatch(p -> name.equals(names.get(p)));
  }

  /** The local ports of this JVM's TCP connections to the Redis port (Linux: /proc). */
  private static Set<Integer> connectionsToRedis() throws IOException {
    Set<String> inodes = new HashSet<>();
    try (DirectoryStream<Path> fds = Files.newDirectoryStream(Path.of("/proc/self/fd"))) {
      for (Path fd : fds) {
        try {
          String target = Files.readSymbolicLink(fd).toString();
          if (target.startsWith("socket:[")) {
            inodes.add(target.substring(8, target.length() - 1));
          }
        } catch (IOException closedMeanwhile) {
          // gone: not a connection any more
        }
      }
    }
    Set<Integer> ports = new HashSet<>();
    for (String table : new String[] {"/proc/self/net/tcp", "/proc/self/net/tcp6"}) {
      Path p = Path.of(table);
      if (!Files.exists(p)) {
        continue;
      }
      for (String line : Files.readAllLines(p).subList(1, Files.readAllLines(p).size())) {
        String[] f = line.trim().split("\\s+");
        int local = Integer.parseInt(f[1].substring(f[1].indexOf(':') + 1), 16);
        int remote = Integer.parseInt(f[2].substring(f[2].indexOf(':') + 1), 16);
        if (remote == REDIS_PORT && "01".equals(f[3]) && inodes.contains(f[9])) { // 01: established
          ports.add(local);
        }
      }
    }
    return ports;
  }
}
