package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.Refund;
import dev.sluice.compose.Composition;
import dev.sluice.compose.NearCachedRateLimiter;
import dev.sluice.compose.SharedState;
import dev.sluice.memory.MemoryRateLimiter;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The round trips a near-cache of refusals saves against a real Redis, counted by the server itself
 * ({@code INFO commandstats}) on a private server, so no other client's commands are counted.
 */
class NearCacheRedisTest {
  private static RedisServerProcess server;
  private static RedisClient client;
  private static StatefulRedisConnection<String, String> admin;

  @BeforeAll static void start() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort(); // a free port: this test does no fault injection, it only counts
    }
    server = RedisServerProcess.start(port);
    client = RedisClient.create(server.uri());
    admin = client.connect();
  }

  @AfterAll static void stop() throws Exception {
    if (client != null) {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }
    if (server != null) {
      server.close();
    }
  }

  private static long evalshaCalls() {
    for (String line : admin.sync().info("commandstats").split("\r?\n")) {
      if (line.startsWith("cmdstat_evalsha:")) {
        String rest = line.substring(line.indexOf("calls=") + 6);
        return Long.parseLong(rest.substring(0, rest.indexOf(',')));
      }
    }
    return 0;
  }

  // A generous deadline: a server this test just started answers its first script load slowly on a
  // busy machine, and this test counts round trips, it does not measure latency.
  private static Policy policy() {
    return Policy.fixedWindow("near-" + UUID.randomUUID().toString().substring(0, 8), 5, Duration.ofMinutes(1));
  }

  @Test void aFloodAgainstALockedKeyCostsNoRoundTripWithTheNearCacheAndOnePerCallWithout() {
    int flood = 10_000;
    Policy p = policy();
    try (RedisRateLimiter redis = RedisRateLimiter.builder(p, client).timeout(Duration.ofSeconds(5)).build()) {
      NearCachedRateLimiter near = NearCachedRateLimiter.builder(redis).build();
      Decision last = null;
      for (int i = 0; i < 5; i++) {
        last = near.tryAcquire("victim");
        assertThat(last.allowed()).as("%s", last).isTrue();
      }
      assertThat(near.tryAcquire("victim").path()).isEqualTo(Path.PRIMARY);

      admin.sync().configResetstat();
      for (int i = 0; i < flood; i++) {
        Decision d = near.tryAcquire("victim");
        assertThat(d.allowed()).isFalse();
        assertThat(d.path()).isEqualTo(Path.NEAR_CACHE);
      }
      long withCache = evalshaCalls();

      admin.sync().configResetstat();
      for (int i = 0; i < flood; i++) {
        assertThat(redis.tryAcquire("victim").allowed()).isFalse();
      }
      long without = evalshaCalls();

      System.out.println("EVALSHA for " + flood + " refused calls: " + withCache + " with the near-cache, " + without + " without");
      assertThat(withCache).isZero();
      assertThat(without).isEqualTo(flood);
      assertThat(near.hits()).isEqualTo(flood);

      // A refund through the near-cache reaches Redis and invalidates the entry: one permit again.
      assertThat(near.refund(last.ticket().orElseThrow())).isEqualTo(Refund.APPLIED);
      assertThat(near.tryAcquire("victim").allowed()).isTrue();
    }
  }

  @Test void aCompositionWithANearCachedRedisInFrontSavesTheSameRoundTrips() {
    Policy p = policy();
    try (RedisRateLimiter redis = RedisRateLimiter.builder(p, client).timeout(Duration.ofSeconds(5)).build()) {
      MemoryRateLimiter local = MemoryRateLimiter.builder(Policy.fixedWindow("local", 100, Duration.ofHours(1))).build();
      Composition c = Composition.builder()
          .sharedState(SharedState.of(NearCachedRateLimiter.builder(redis).build()))
          .leg(local)
          .build();
      for (int i = 0; i < 6; i++) {
        assertThat(c.tryAcquire("tenant").allowed()).isEqualTo(i < 5);
      }
      admin.sync().configResetstat();
      Map<String, Integer> paths = new HashMap<>();
      for (int i = 0; i < 1_000; i++) {
        Decision d = c.tryAcquire("tenant");
        assertThat(d.allowed()).isFalse();
        paths.merge(d.path().name(), 1, Integer::sum);
      }
      assertThat(evalshaCalls()).isZero();
      assertThat(paths).containsExactly(Map.entry("NEAR_CACHE", 1_000));
      assertThat(local.peek("tenant").remaining()).as("the local leg counted only the admitted calls").isEqualTo(95);
    }
  }
}
