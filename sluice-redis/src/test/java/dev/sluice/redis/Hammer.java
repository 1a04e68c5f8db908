package dev.sluice.redis;

import dev.sluice.Policy;
import io.lettuce.core.RedisClient;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * One process of the two-process test: 16 threads hammering one key under each algorithm, on the
 * server clock, then 16 threads reserving random estimates on another key and settling each at a
 * random actual (issue 19). Run as a main in a second JVM (connects, prints READY, waits for GO on
 * stdin, prints the admissions and then the sums of the actuals per algorithm) and used in-process
 * by the test for the first.
 */
public final class Hammer implements AutoCloseable {
  static final int THREADS = 16;
  static final int CALLS_PER_THREAD = 125;
  static final long LIMIT = 300;
  /** The settlement phase's limit: more than both processes' actuals together, so none is refused. */
  static final long COST_LIMIT = 100_000;
  static final String COST_KEY = "cost-key";

  private final List<RedisRateLimiter> limiters;
  private final List<RedisRateLimiter> costLimiters;
  private final String key;

  Hammer(RedisClient client, String prefix, String key) {
    this.limiters = policies(prefix).stream()
        .map(p -> RedisRateLimiter.builder(p, client).timeout(Duration.ofSeconds(5)).build()).toList();
    this.costLimiters = policies(prefix + "-cost", COST_LIMIT).stream()
        .map(p -> RedisRateLimiter.builder(p, client).timeout(Duration.ofSeconds(5)).build()).toList();
    this.key = key;
    limiters.forEach(l -> l.peek(key));  // connected, scripts cached: ready to race
    costLimiters.forEach(l -> l.peek(COST_KEY));
  }

  static List<Policy> policies(String prefix) {
    return policies(prefix, LIMIT);
  }

  static List<Policy> policies(String prefix, long limit) {
    Duration hour = Duration.ofHours(1);
    return List.of(
        Policy.fixedWindow(prefix + "-fw", limit, hour),
        Policy.slidingWindow(prefix + "-sw", limit, hour),
        Policy.tokenBucket(prefix + "-tb", limit, 1, hour),
        Policy.gcra(prefix + "-gc", 1, hour, limit),
        Policy.slidingLog(prefix + "-sl", limit, hour));
  }

  List<RedisRateLimiter> costLimiters() {
    return costLimiters;
  }

  /**
   * 16 threads reserve 1..60 and settle each reservation at 0..99 on {@link #COST_KEY} under each
   * algorithm; returns the sum of the actuals per algorithm (what the key must have been charged,
   * together with the other process's).
   */
  long[] settle(long seed) throws InterruptedException {
    AtomicLongArray actuals = new AtomicLongArray(costLimiters.size());
    AtomicLongArray failures = new AtomicLongArray(1);
    Thread[] threads = new Thread[THREADS];
    for (int t = 0; t < THREADS; t++) {
      java.util.SplittableRandom rnd = new java.util.SplittableRandom(seed * 31 + t);
      threads[t] = new Thread(() -> {
        for (int i = 0; i < 50; i++) {
          int a = i % costLimiters.size();
          RedisRateLimiter l = costLimiters.get(a);
          dev.sluice.Decision d = l.tryAcquire(COST_KEY, 1 + rnd.nextLong(60));
          long actual = rnd.nextLong(100);
          if (d.allowed() && l.settle(d.ticket().orElseThrow(), actual) != dev.sluice.Settlement.FAILED) {
            actuals.addAndGet(a, actual);
          } else {
            failures.incrementAndGet(0);
          }
        }
      });
      threads[t].start();
    }
    for (Thread t : threads) {
      t.join();
    }
    if (failures.get(0) > 0) {
      throw new IllegalStateException(failures.get(0) + " reservations or settlements failed");
    }
    long[] out = new long[costLimiters.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = actuals.get(i);
    }
    return out;
  }

  /** Starts the threads, opens {@code go} (released by the caller), returns admissions per policy. */
  long[] run(CountDownLatch go) throws InterruptedException {
    AtomicLongArray admitted = new AtomicLongArray(limiters.size());
    Thread[] threads = new Thread[THREADS];
    for (int t = 0; t < THREADS; t++) {
      threads[t] = new Thread(() -> {
        try {
          go.await();
        } catch (InterruptedException e) {
          return;
        }
        for (int i = 0; i < CALLS_PER_THREAD; i++) {
          int a = i % limiters.size();
          if (limiters.get(a).tryAcquire(key).allowed()) {
            admitted.incrementAndGet(a);
          }
        }
      });
      threads[t].start();
    }
    for (Thread t : threads) {
      t.join();
    }
    long[] out = new long[limiters.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = admitted.get(i);
    }
    return out;
  }

  @Override public void close() {
    limiters.forEach(RedisRateLimiter::close);
    costLimiters.forEach(RedisRateLimiter::close);
  }

  public static void main(String[] args) throws Exception {
    RedisClient client = RedisClient.create(args[0]);
    long[] result;
    long[] settled;
    try (Hammer h = new Hammer(client, args[1], args[2])) {
      CountDownLatch go = new CountDownLatch(1);
      Thread opener = new Thread(() -> {
        try {
          if ("GO".equals(new BufferedReader(new InputStreamReader(System.in)).readLine())) {
            go.countDown();
          }
        } catch (Exception e) {
          System.exit(3);
        }
      });
      opener.setDaemon(true);
      opener.start();
      System.out.println("READY");
      System.out.flush();
      result = h.run(go);
      settled = h.settle(2);
    } finally {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }
    StringBuilder b = new StringBuilder("ADMITTED");
    for (long n : result) {
      b.append(' ').append(n);
    }
    System.out.println(b);
    StringBuilder s = new StringBuilder("SETTLED");
    for (long n : settled) {
      s.append(' ').append(n);
    }
    System.out.println(s);
    System.out.flush();
    System.exit(0);
  }
}
