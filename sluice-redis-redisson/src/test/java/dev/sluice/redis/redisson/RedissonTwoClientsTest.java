package dev.sluice.redis.redisson;

import dev.sluice.redis.CrossClientRun;
import dev.sluice.redis.FreezeRun;
import dev.sluice.redis.RedisRateLimiter;
import dev.sluice.redis.RedisServerProcess;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.redisson.api.RedissonClient;

/**
 * Redisson beside Lettuce, and Redisson through a frozen server, each on a private redis-server of its
 * own (so that INFO commandstats counts only this test's commands).
 */
class RedissonTwoClientsTest {
  /** A second JVM on Lettuce and this one on Redisson, 16 threads each, one key, limit 1000, every algorithm. */
  @Test void lettuceAndRedissonShareOneBudgetExactlyWithOneEvalshaPerDecision() throws Exception {
    try (RedisServerProcess server = RedisServerProcess.start(7451)) {
      RedissonClient redisson = RedissonClients.standalone(server.uri());
      try (RedissonTransport t = RedissonTransport.of(redisson)) {
        CrossClientRun.run(server, "redisson",
            p -> RedisRateLimiter.builder(p, t).timeout(Duration.ofSeconds(5)).maxBatch(1).build());
      } finally {
        redisson.shutdown();
      }
    }
  }

  /** SIGSTOP for 2 s under 16 threads: every decision within its deadline plus the margin, exact counts after. */
  @Test void aFrozenServerCostsNoDecisionMoreThanItsDeadline() throws Exception {
    try (RedisServerProcess server = RedisServerProcess.start(7431)) {
      RedissonClient redisson = RedissonClients.standalone(server.uri());
      try (RedissonTransport t = RedissonTransport.of(redisson)) {
        FreezeRun.run(server, "redisson", (p, timeout) -> RedisRateLimiter.builder(p, t).timeout(timeout).build());
      } finally {
        redisson.shutdown();
      }
    }
  }
}
