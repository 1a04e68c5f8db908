package dev.sluice.redis;

import static dev.sluice.tck.RateLimiterContract.hammer;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Request coalescing on Redis (issue 18): concurrent acquires for one key go to Redis in fewer
 * EVALSHAs than there are decisions, and exactly the limit is admitted; {@code maxBatch(1)} sends
 * one EVALSHA per decision. (The kit checks that batches decide exactly as the reference model.)
 */
class CoalescingTest {
  private static Policy policy(long limit) {
    return Policy.fixedWindow("coalesce-" + UUID.randomUUID().toString().substring(0, 8), limit, Duration.ofMinutes(10));
  }

  /**
   * These tests count admissions exactly, so no decision may fail for lateness: a store call that
   * outlived the default 100 ms on a starved machine was refused by the failure mode (788 of 800).
   */
  private static final Duration PATIENT = Duration.ofSeconds(10);

  /** A listener that counts store calls. */
  private static final class Calls implements RateLimitListener {
    final AtomicLong calls = new AtomicLong();

    @Override public void onStoreCall(Policy policy, long latencyNanos, Throwable error) {
      calls.incrementAndGet();
    }
  }

  @Test void sixteenThreadsOnOneHotKeyShareStoreCallsAndAdmitExactlyTheLimit() throws Exception {
    long limit = 1_000;
    Calls calls = new Calls();
    try (RedisRateLimiter l = RedisRateLimiter.builder(policy(limit), SharedRedis.client()).listener(calls, false).timeout(PATIENT).build()) {
      long admitted = hammer(16, 200, i -> l.tryAcquire("hot").allowed());
      System.out.println("coalescing: 3200 sync decisions on one key in " + calls.calls.get() + " EVALSHAs");
      assertThat(admitted).isEqualTo(limit);
      assertThat(calls.calls.get()).as("store calls for 3,200 decisions").isLessThan(3_200);
    }
  }

  @Test void asyncCallsInFlightOnOneKeyShareStoreCalls() {
    Calls calls = new Calls();
    try (RedisRateLimiter l = RedisRateLimiter.builder(policy(500), SharedRedis.client()).listener(calls, false).timeout(PATIENT).build()) {
      List<CompletableFuture<Decision>> all = new ArrayList<>();
      for (int i = 0; i < 2_000; i++) {
        all.add(l.tryAcquireAsync("hot", 1).toCompletableFuture());
      }
      long admitted = all.stream().filter(f -> f.join().allowed()).count();
      System.out.println("coalescing: 2000 async decisions on one key in " + calls.calls.get() + " EVALSHAs");
      assertThat(admitted).isEqualTo(500);
      assertThat(calls.calls.get()).isLessThan(2_000);
    }
  }

  @Test void maxBatchOneSendsOneCallPerDecision() throws Exception {
    Calls calls = new Calls();
    try (RedisRateLimiter l = RedisRateLimiter.builder(policy(1_000), SharedRedis.client()).listener(calls, false).timeout(PATIENT)
        .maxBatch(1).build()) {
      long admitted = hammer(8, 100, i -> l.tryAcquire("hot").allowed());
      assertThat(admitted).isEqualTo(800);
      assertThat(calls.calls.get()).isEqualTo(800);
    }
  }
}
