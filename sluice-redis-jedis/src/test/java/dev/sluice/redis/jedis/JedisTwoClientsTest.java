package dev.sluice.redis.jedis;

import dev.sluice.redis.CrossClientRun;
import dev.sluice.redis.FreezeRun;
import dev.sluice.redis.RedisRateLimiter;
import dev.sluice.redis.RedisServerProcess;
import java.time.Duration;
import org.junit.jupiter.api.Test;
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
