package dev.sluice.benchmarks;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.redis.RedisRateLimiter;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What a store timeout costs (issue 27, finding 9): how many permits requests answered {@code timeout}
 * spent anyway, because their write reached Redis after their deadline. Each round takes a fresh key
 * of a fixed window of {@code LIMIT} permits an hour, sends {@code REQUESTS} single-permit
 * {@code tryAcquire} calls from {@code THREADS} threads through a {@link RedisRateLimiter} with the
 * timeout under test (the service's and the library's default is 100 ms) and the closed failure mode,
 * then reads what the key holds with a separate limiter and a 10 s timeout. Permits spent by timed-out
 * requests = (limit - remaining) - allowed. {@code BURN} threads spin meanwhile, loading the host.
 *
 * <pre>sluice-benchmarks/timeout-charge.sh [TIMEOUT_MS [ROUNDS [THREADS [BURN [LIMIT [REQUESTS]]]]]]</pre>
 *
 * <p>or {@code java -cp sluice-benchmarks/target/benchmarks.jar dev.sluice.benchmarks.TimeoutCharge
 * REDIS_URL TIMEOUT_MS ROUNDS THREADS BURN LIMIT REQUESTS}. Not a test, not JMH: a measurement run by hand.
 */
public final class TimeoutCharge {
  private static final AtomicLong sink = new AtomicLong(); // keeps the burners' work from being optimized away

  private TimeoutCharge() {}

  public static void main(String[] args) throws Exception {
    String url = args.length > 0 ? args[0] : "redis://127.0.0.1:6379";
    Duration timeout = Duration.ofMillis(args.length > 1 ? Long.parseLong(args[1]) : 100);
    int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 20;
    int threads = args.length > 3 ? Integer.parseInt(args[3]) : 64;
    int burn = args.length > 4 ? Integer.parseInt(args[4]) : 0;
    int limit = args.length > 5 ? Integer.parseInt(args[5]) : 100;
    int requests = args.length > 6 ? Integer.parseInt(args[6]) : 3 * limit;

    AtomicInteger stop = new AtomicInteger();
    List<Thread> burners = new ArrayList<>();
    for (int i = 0; i < burn; i++) {
      Thread t = new Thread(() -> {
        long x = 0;
        while (stop.get() == 0) {
          x += System.nanoTime() % 7;
        }
        sink.addAndGet(x);
      }, "burn-" + i);
      t.setDaemon(true);
      t.start();
      burners.add(t);
    }

    RedisClient client = RedisClient.create(RedisURI.create(url));
    RedisClient readerClient = RedisClient.create(RedisURI.create(url));
    String run = UUID.randomUUID().toString().substring(0, 8);
    Policy policy = Policy.fixedWindow("timeout-charge-" + run, limit, Duration.ofHours(1));
    long[] leaked = new long[rounds];
    long totalAllowed = 0;
    long totalTimeouts = 0;
    long totalSpent = 0;
    long[] latencies = new long[rounds * requests];
    int latencyCount = 0;
    System.out.printf(Locale.ROOT, "redis %s, timeout %d ms, %d rounds, %d threads, %d burner threads, limit %d, %d requests a round;"
        + " load average before: %s%n", url, timeout.toMillis(), rounds, threads, burn, limit, requests, loadAverage());
    try (RedisRateLimiter limiter = RedisRateLimiter.builder(policy, client).timeout(timeout).failureMode(FailureMode.closed()).build();
         RedisRateLimiter reader = RedisRateLimiter.builder(policy, readerClient).timeout(Duration.ofSeconds(10)).build()) {
      // Rounds start once both limiters have a connection: decisions before it are store failures.
      long connectBy = System.nanoTime() + 60_000_000_000L;
      while (limiter.tryAcquire("warm-up").reason().isFailure() || reader.peek("warm-up").reason().isFailure()) {
        if (System.nanoTime() > connectBy) {
          throw new IllegalStateException("no connection to " + url + " within 60 s");
        }
        Thread.sleep(100);
      }
      for (int r = 0; r < rounds; r++) {
        String key = "round-" + r;
        AtomicInteger next = new AtomicInteger();
        AtomicInteger allowed = new AtomicInteger();
        AtomicInteger timeouts = new AtomicInteger();
        AtomicInteger failures = new AtomicInteger();
        long[] lat = new long[requests];
        AtomicLong slowest = new AtomicLong();
        CountDownLatch done = new CountDownLatch(threads);
        for (int t = 0; t < threads; t++) {
          Thread worker = new Thread(() -> {
            try {
              for (int i = next.getAndIncrement(); i < requests; i = next.getAndIncrement()) {
                long start = System.nanoTime();
                Decision d = limiter.tryAcquire(key);
                long took = System.nanoTime() - start;
                lat[i] = took;
                slowest.accumulateAndGet(took, Math::max);
                if (d.allowed()) {
                  allowed.incrementAndGet();
                } else if (d.reason() == Reason.TIMEOUT) {
                  timeouts.incrementAndGet();
                } else if (d.reason().isFailure()) {
                  failures.incrementAndGet();
                }
              }
            } finally {
              done.countDown();
            }
          }, "acquire-" + t);
          worker.setDaemon(true);
          worker.start();
        }
        done.await();
        // A late write lands within moments of its deadline; wait until the count stops moving.
        long remaining = remaining(reader, key);
        for (int i = 0; i < 20; i++) {
          Thread.sleep(100);
          long now = remaining(reader, key);
          if (now == remaining && i >= 4) {
            break;
          }
          remaining = now;
        }
        long spent = limit - remaining;
        leaked[r] = spent - allowed.get();
        totalAllowed += allowed.get();
        totalTimeouts += timeouts.get();
        totalSpent += spent;
        System.arraycopy(lat, 0, latencies, latencyCount, requests);
        latencyCount += requests;
        System.out.printf(Locale.ROOT, "round %2d: allowed %3d, timeout %3d, other failures %d, spent %3d of %d -> %3d spent by timed-out"
            + " requests; slowest call %.1f ms%n", r + 1, allowed.get(), timeouts.get(), failures.get(), spent, limit, leaked[r],
            slowest.get() / 1e6);
      }
    } finally {
      stop.set(1);
      client.shutdown();
      readerClient.shutdown();
    }
    long[] sortedLeak = leaked.clone();
    Arrays.sort(sortedLeak);
    long totalLeak = Arrays.stream(leaked).sum();
    long[] lat = Arrays.copyOf(latencies, latencyCount);
    Arrays.sort(lat);
    System.out.printf(Locale.ROOT, "total: %d rounds, %d allowed, %d timeouts, %d permits spent, %d of them by timed-out requests (%.1f %%);"
            + " per round median %d, max %d of %d%n", rounds, totalAllowed, totalTimeouts, totalSpent, totalLeak,
        100.0 * totalLeak / Math.max(1, totalSpent), sortedLeak[rounds / 2], sortedLeak[rounds - 1], limit);
    System.out.printf(Locale.ROOT, "call latency: p50 %.1f ms, p99 %.1f ms, p99.9 %.1f ms, max %.1f ms; load average after: %s%n",
        lat[lat.length / 2] / 1e6, lat[(int) (lat.length * 0.99)] / 1e6, lat[(int) (lat.length * 0.999)] / 1e6, lat[lat.length - 1] / 1e6,
        loadAverage());
  }

  /** What the key has left; a failed read is no figure (a failure decision says 0 remaining). */
  private static long remaining(RedisRateLimiter reader, String key) {
    Decision d = reader.peek(key);
    if (d.reason().isFailure()) {
      throw new IllegalStateException("could not read " + key + ": " + d.reason());
    }
    return d.remaining();
  }

  private static String loadAverage() {
    try {
      String[] f = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg")).split(" ");
      return f[0] + " " + f[1] + " " + f[2];
    } catch (java.io.IOException | RuntimeException e) {
      return "unknown";
    }
  }
}
