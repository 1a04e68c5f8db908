package dev.sluice.redis.jedis;

import dev.sluice.redis.CrossClientRun;
import dev.sluice.redis.FreezeRun;
import dev.sluice.redis.RedisRateLimiter;
import dev.sluice.redis.RedisServerProcess;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.JedisPool;
import redis.clients.jedis.JedisPoolConfig;
import redis.clients.jedis.UnifiedJedis;

/**
 * Jedis beside Lettuce, and Jedis through a frozen server, each on a private redis-server of its
 * own (so that INFO commandstats counts only this test's commands).
 */
class JedisTwoClientsTest {
  /** A second JVM on Lettuce and this one on Jedis, 16 threads each, one key, limit 1000, every algorithm. */
  @Test void lettuceAndJedisShareOneBudgetExactlyWithOneEvalshaPerDecision() throws Exception {
    try (RedisServerProcess server = RedisServerProcess.start(7351)) {
      UnifiedJedis jedis = JedisClients.standalone(server.uri());
      try (JedisTransport t = JedisTransport.of(jedis, CrossClientRun.THREADS)) {
        CrossClientRun.run(server, "jedis",
            p -> RedisRateLimiter.builder(p, t).timeout(Duration.ofSeconds(5)).maxBatch(1).build());
      } finally {
        jedis.close();
      }
    }
  }

  /**
   * The same through {@link JedisTransport#borrowing}: a {@code Jedis} borrowed per command from a
   * {@code JedisPool}, as the Spring starter does with a {@code JedisConnectionFactory}'s pool; borrowing
   * sends no command of its own, so still exactly one EVALSHA per decision.
   */
  @Test void lettuceAndABorrowedJedisShareOneBudgetExactlyWithOneEvalshaPerDecision() throws Exception {
    try (RedisServerProcess server = RedisServerProcess.start(7343)) {
      JedisPool pool = new JedisPool(poolOf(CrossClientRun.THREADS), "127.0.0.1", 7343, JedisClients.SOCKET_TIMEOUT_MILLIS);
      try (JedisTransport t = JedisTransport.borrowing(pool::getResource, CrossClientRun.THREADS)) {
        CrossClientRun.run(server, "jedis-borrowing",
            p -> RedisRateLimiter.builder(p, t).timeout(Duration.ofSeconds(5)).maxBatch(1).build());
      } finally {
        pool.close();
      }
    }
  }

  private static JedisPoolConfig poolOf(int size) {
    JedisPoolConfig c = new JedisPoolConfig();
    c.setMaxTotal(size);
    c.setMaxIdle(size);
    return c;
  }

  /** SIGSTOP for 2 s under 16 threads: every decision within its deadline plus the margin, exact counts after. */
  @Test void aFrozenServerCostsNoDecisionMoreThanItsDeadline() throws Exception {
    try (RedisServerProcess server = RedisServerProcess.start(7331)) {
      UnifiedJedis jedis = JedisClients.standalone(server.uri());
      try (JedisTransport t = JedisTransport.of(jedis)) {
        FreezeRun.run(server, "jedis", (p, timeout) -> RedisRateLimiter.builder(p, t).timeout(timeout).build());
      } finally {
        jedis.close();
      }
    }
  }
}
