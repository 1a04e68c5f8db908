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
 * server clock. Run as a main in a second JVM (connects, prints READY, waits for GO on stdin, prints
 * the admissions per algorithm) and used in-process by the test for the first.
 */
public final class Hammer implements AutoCloseable {
  static final int THREADS = 16;
  static final int CALLS_PER_THREAD = 125;
  static final long LIMIT = 300;

  private final List<RedisRateLimiter> limiters;
  private final String key;

  Hammer(RedisClient client, String prefix, String key) {
    this.limiters = policies(prefix).stream()
        .map(p -> RedisRateLimiter.builder(p, client).timeout(Duration.ofSeconds(5)).build()).toList();
    this.key = key;
    limiters.forEach(l -> l.peek(key));  // connected, scripts cached: ready to race
  }

  static List<Policy> policies(String prefix) {
    Duration hour = Duration.ofHours(1);
    return List.of(
        Policy.fixedWindow(prefix + "-fw", LIMIT, hour),
        Policy.slidingWindow(prefix + "-sw", LIMIT, hour),
        Policy.tokenBucket(prefix + "-tb", LIMIT, 1, hour),
        Policy.gcra(prefix + "-gc", 1, hour, LIMIT),
        Policy.slidingLog(prefix + "-sl", LIMIT, hour));
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
  }

  public static void main(String[] args) throws Exception {
    RedisClient client = RedisClient.create(args[0]);
    long[] result;
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
    } finally {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }
    StringBuilder b = new StringBuilder("ADMITTED");
    for (long n : result) {
      b.append(' ').append(n);
    }
    System.out.println(b);
    System.out.flush();
    System.exit(0);
  }
}
