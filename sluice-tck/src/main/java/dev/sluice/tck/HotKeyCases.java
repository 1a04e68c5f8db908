package dev.sluice.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sluice.Decision;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.Function;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Hot-key concurrency, on every backend: 16 threads on one key (sync, and sync mixed with async, as
 * a coalescing backend batches them) and on many keys admit exactly the limit, and an async burst
 * on one key is decided as the reference model decides it in issue order. {@link #hammer} is public
 * for a backend's own concurrency tests. Part of {@link RateLimiterContract}.
 */
public abstract sealed class HotKeyCases extends KitFixtures permits SettlementCases {

  HotKeyCases() {}

  // ------------------------------------------------------------------------------------------
  // 16 threads admit exactly the limit, never more; an async burst decides in issue order.
  // ------------------------------------------------------------------------------------------

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void sixteenThreadsOnOneHotKeyAdmitExactlyTheLimit(String algorithm) throws Exception {
    long limit = 200;
    Policy p = policy(alg(algorithm), limit);
    RateLimiter l = limiter(p, newTicker());
    long admitted = hammer(16, 25, i -> l.tryAcquire("hot").allowed());
    assertThat(admitted).isEqualTo(limit);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void sixteenThreadsOnManyKeysAdmitExactlyTheLimitPerKey(String algorithm) throws Exception {
    int keys = 20;
    long limit = 10;
    Policy p = policy(alg(algorithm), limit);
    RateLimiter l = limiter(p, newTicker());
    AtomicLongArray perKey = new AtomicLongArray(keys);
    hammer(16, 20, i -> {
      int k = i % keys;
      boolean ok = l.tryAcquire("many-" + k).allowed();
      if (ok) {
        perKey.incrementAndGet(k);
      }
      return ok;
    });
    for (int k = 0; k < keys; k++) {
      assertThat(perKey.get(k)).as("key many-%d", k).isEqualTo(limit);
    }
  }

  /** Sync and async callers on one hot key (a coalescing backend mixes them in one batch) admit exactly the limit. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void sixteenThreadsMixingSyncAndAsyncOnOneHotKeyAdmitExactlyTheLimit(String algorithm) throws Exception {
    long limit = 200;
    Policy p = policy(alg(algorithm), limit);
    RateLimiter l = limiter(p, newTicker());
    long admitted = hammer(16, 25, i -> i % 2 == 0 ? l.tryAcquire("hot").allowed()
        : l.tryAcquireAsync("hot", 1).toCompletableFuture().join().allowed());
    assertThat(admitted).isEqualTo(limit);
  }

  /**
   * Many asynchronous acquires for one key issued at one instant (which a coalescing backend sends
   * as batches behind the first) are decided exactly as the reference model decides them one after
   * another in the order they were issued: remaining, reset, retry and tickets included.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void anAsyncBurstOnOneKeyIsDecidedAsTheModelInIssueOrder(String algorithm) {
    assumeTrue(decidesAsyncCallsInIssueOrder(), "the backend's async calls for one key may reach the store in any order");
    SplittableRandom rnd = new SplittableRandom(algorithm.hashCode());
    Policy p = policy(alg(algorithm), 40);
    ManualTicker ticker = newTicker();
    RateLimiter backend = limiter(p, ticker);
    ReferenceLimiter model = new ReferenceLimiter();
    for (int round = 0; round < 3; round++) {
      long now = ticker.nowMicros();
      int n = 150;
      long[] permits = new long[n];
      List<CompletableFuture<Decision>> got = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        permits[i] = rnd.nextInt(3) == 0 ? 1 + rnd.nextInt(4) : 1;
        got.add(backend.tryAcquireAsync("burst", permits[i]).toCompletableFuture());
      }
      for (int i = 0; i < n; i++) {
        Decision want = model.acquire(p, "burst", permits[i], now);
        assertThat(got.get(i).join()).as("round %d, request %d of %d permits at t=%d", round, i, permits[i], now).isEqualTo(want);
      }
      ticker.advanceMicros(windowMicros(p) / 3 + round);
    }
  }

  /**
   * Runs {@code perThread} calls on each of {@code threads} threads released together; counts trues.
   * Public for a backend's own concurrency tests.
   */
  public static long hammer(int threads, int perThread, Function<Integer, Boolean> call) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      CountDownLatch start = new CountDownLatch(1);
      AtomicLong admitted = new AtomicLong();
      List<Future<?>> fs = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int base = t * perThread;
        fs.add(pool.submit(() -> {
          start.await();
          for (int i = 0; i < perThread; i++) {
            if (call.apply(base + i)) {
              admitted.incrementAndGet();
            }
          }
          return null;
        }));
      }
      start.countDown();
      for (Future<?> f : fs) {
        f.get(120, TimeUnit.SECONDS);
      }
      return admitted.get();
    } finally {
      pool.shutdownNow();
    }
  }
}
