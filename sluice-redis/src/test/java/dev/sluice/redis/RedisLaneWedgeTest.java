package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.Reason;
import io.lettuce.core.KillArgs;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Issue 26, finding 1, on real faults: a hot key's coalescing lane locked up for good after a
 * connection loss. With 16 synchronous threads and a window of 1,000 asynchronous acquires on one key,
 * coalescing on, a Redis killed with SIGKILL and restarted, or whose connections were killed 20 times
 * with {@code CLIENT KILL}, left that key deciding {@code TIMEOUT} for good while a cold key of the
 * same limiter was back on Redis at once: each batch failed at once while disconnected, its completion
 * ran inline and handed the lane on by recursion until a swallowed {@link StackOverflowError} left the
 * lane busy. {@code STORE_UNAVAILABLE} decisions meanwhile waited behind the recursion (half of them 3
 * to 8 ms).
 *
 * <p>Asserted after each fault: every key (the hot one and a cold one, sync and async) decides on Redis
 * again within {@value #RECOVERY_MILLIS} ms of the store's return: the instant the restarted server
 * answers PING on a raw socket, or the last {@code CLIENT KILL} returned. That includes the limiter's
 * new connection (a retry every 25 ms, a handshake, the scripts loaded), which on 2 cores shared with
 * other builds (load average 6 to 18) came 93 to 574 ms after a restart in 6 runs of 29 (never after
 * the kills, 15 runs), every key following it within 25 ms. So when the first decision on the new
 * connection comes later than {@value #RECONNECT_SLACK_MILLIS} ms, but within
 * {@value #RECONNECT_MILLIS} ms, every key must follow it within {@value #RECONNECT_SLACK_MILLIS} ms:
 * the lane, which this is about, adds nothing to the reconnection; the figures printed show which
 * bound applied. While Redis is away half of the {@code STORE_UNAVAILABLE} decisions take at most
 * {@value #UNAVAILABLE_P50_MILLIS} ms (3.0 to 8.1 ms before, queued behind the recursion), and none
 * takes more than {@value #UNAVAILABLE_CPU_MILLIS} ms of its caller's CPU.
 *
 * <p>Private servers on ports 7191 and 7192, never the shared one.
 */
class RedisLaneWedgeTest {
  private static final long RECOVERY_MILLIS = 100;
  private static final long RECONNECT_SLACK_MILLIS = 50;
  private static final long RECONNECT_MILLIS = 1_000;
  private static final long UNAVAILABLE_P50_MILLIS = 2;
  private static final long UNAVAILABLE_CPU_MILLIS = 50;
  private static final int SYNC_THREADS = 16;
  private static final int ASYNC_WINDOW = 1_000;
  private static final ThreadMXBean CPU = ManagementFactory.getThreadMXBean();

  /** A limiter on {@code server} (its own client) under the load, once it decides on Redis. */
  private static Load start(RedisServerProcess server) throws Exception {
    RedisURI uri = RedisURI.create(server.uri());
    uri.setTimeout(Duration.ofSeconds(2));
    RedisClient client = RedisClient.create(uri);
    Policy policy = Policy.fixedWindow("wedge-" + UUID.randomUUID().toString().substring(0, 8), 1L << 40, Duration.ofMinutes(10));
    RedisRateLimiter limiter = RedisRateLimiter.builder(policy, client).build(); // coalescing on (maxBatch 64), timeout 100 ms
    try {
      // Connected before the load starts: callers spinning on failures could starve the first handshake.
      awaitUntil(() -> limiter.tryAcquire("warm").path() == Path.PRIMARY, "the limiter's first connection", 30);
    } catch (Throwable e) {
      limiter.close();
      client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
      throw e;
    }
    Load load = new Load(client, limiter);
    try {
      awaitUntil(() -> load.hotSync.primary.get() > 100 && load.hotAsync.primary.get() > 100
          && load.coldSync.primary.get() > 10 && load.coldAsync.primary.get() > 10, "decisions on Redis before the fault", 30);
    } catch (Throwable e) {
      load.close();
      throw new AssertionError(load.counts(), e);
    }
    return load;
  }

  @Test void aHotKeysLaneDecidesOnRedisAgainWithinAHundredMillisecondsOfItsRestartAfterSigkill() throws Exception {
    try (RedisServerProcess server = RedisServerProcess.start(7191); Load load = start(server)) {
      server.kill();
      long killedAt = System.nanoTime();
      awaitUntil(() -> System.nanoTime() - killedAt > TimeUnit.MILLISECONDS.toNanos(1_200) && load.failed() > 100,
          "decisions failing while Redis is dead", 10);
      load.pace();
      awaitUntil(() -> System.nanoTime() - killedAt > TimeUnit.MILLISECONDS.toNanos(1_600), "the rest of the outage, paced", 10);
      load.watchFrom(System.nanoTime()); // Redis is dead: a decision on it from here on came after its return
      server.launch();
      long backAt = awaitReturn(server);
      load.assertEveryKeyBackWithin(backAt, "SIGKILL, restart " + (backAt - killedAt) / 1_000_000 + " ms later");
    }
  }

  @Test void aHotKeysLaneDecidesOnRedisAgainWithinAHundredMillisecondsOfTwentyClientKills() throws Exception {
    try (RedisServerProcess server = RedisServerProcess.start(7192); Load load = start(server);
         StatefulRedisConnection<String, String> admin = load.client.connect()) {
      long firstKill = System.nanoTime();
      long failedBefore = load.failed();
      for (int i = 1; i < 20; i++) { // about 100 ms apart, 2 s in all
        long killedAt = System.nanoTime();
        admin.sync().clientKill(KillArgs.Builder.typeNormal().skipme()); // the limiter's connection(s), not this one
        awaitUntil(() -> System.nanoTime() - killedAt > TimeUnit.MILLISECONDS.toNanos(100), "the next kill", 10);
      }
      load.pace();
      admin.sync().clientKill(KillArgs.Builder.typeNormal().skipme());
      long backAt = System.nanoTime(); // the server never left: it is back as the last kill returns
      load.watchFrom(backAt);
      assertThat(load.failed() - failedBefore).as("decisions the kills failed").isPositive();
      load.assertEveryKeyBackWithin(backAt, "20 x CLIENT KILL over " + (backAt - firstKill) / 1_000_000 + " ms");
    }
  }

  /** Polls the restarted server on a raw socket: the instant it answers PING is its return. */
  private static long awaitReturn(RedisServerProcess server) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!server.answersPing()) {
      assertThat(System.nanoTime()).as("redis-server answers PING within 10 s of its restart").isLessThan(deadline);
      LockSupport.parkNanos(200_000);
    }
    return System.nanoTime();
  }

  private static void awaitUntil(BooleanSupplier condition, String what, long seconds) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime()).as("waiting %d s for %s", seconds, what).isLessThan(deadline);
      Thread.sleep(1);
    }
  }

  /** When one kind of caller on one key first decided on Redis after a given instant. */
  private static final class Watch {
    final String what;
    final AtomicLong primary = new AtomicLong();
    final AtomicLong failed = new AtomicLong();
    final AtomicLong lastReason = new AtomicLong(-1);
    private volatile long since;
    private volatile boolean watching;
    private final AtomicLong firstPrimary = new AtomicLong();

    Watch(String what) {
      this.what = what;
    }

    /** A decision asked for at {@code start} and answered at {@code end}: one asked for after the mark counts. */
    void record(Decision d, long start, long end) {
      if (d.path() == Path.PRIMARY) {
        primary.incrementAndGet();
        if (watching && start - since > 0) {
          firstPrimary.compareAndSet(0, end);
        }
      } else {
        failed.incrementAndGet();
        lastReason.set(d.reason().ordinal());
      }
    }

    void watchFrom(long t) {
      firstPrimary.set(0);
      since = t;
      watching = true;
    }

    boolean back() {
      return firstPrimary.get() != 0;
    }

    String lastFailure() {
      long r = lastReason.get();
      return r < 0 ? "none" : Reason.values()[(int) r].toString();
    }

    String recovery(long backAt) {
      long first = firstPrimary.get();
      return what + ": " + (first == 0 ? "never (last failure " + lastFailure() + ")"
          : Math.max(0, first - backAt) / 1_000_000.0 + " ms");
    }
  }

  /**
   * The load of the issue: {@value #SYNC_THREADS} threads deciding on the hot key back to back, a
   * window of {@value #ASYNC_WINDOW} asynchronous acquires on it, and two threads deciding on a cold
   * key, one sync and one async, about once a millisecond.
   *
   * <p>While the store is away every decision fails at once, so these callers spin: on 2 shared cores
   * they starved the client's reconnection of CPU (a connection handshake that takes 3 to 8 ms took
   * 450 to 1,900 ms), and the time to recover measured the machine, not the limiter. So the fault
   * comes under that load, which is what wedged the lane, and the return is timed under a paced one
   * ({@link #pace}): a decision per thread about every millisecond, async acquires about every 50 us.
   */
  private static final class Load implements AutoCloseable {
    final Watch hotSync = new Watch("hot key, sync");
    final Watch hotAsync = new Watch("hot key, async");
    final Watch coldSync = new Watch("cold key, sync");
    final Watch coldAsync = new Watch("cold key, async");
    /** Synchronous {@code STORE_UNAVAILABLE} decisions on the hot key: wall and CPU time on the caller's thread. */
    private final long[] unavailableWall = new long[1 << 20];
    private final long[] unavailableCpu = new long[1 << 20];
    private final AtomicInteger sampled = new AtomicInteger();
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final List<Thread> threads = new ArrayList<>();
    private final ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
    private final Semaphore window = new Semaphore(ASYNC_WINDOW);
    private volatile boolean paced;
    final RedisClient client;
    private final RedisRateLimiter limiter;

    Load(RedisClient client, RedisRateLimiter l) {
      this.client = client;
      this.limiter = l;
      for (int t = 0; t < SYNC_THREADS; t++) {
        spawn("hot-sync-" + t, () -> {
          long c0 = CPU.getCurrentThreadCpuTime();
          long t0 = System.nanoTime();
          Decision d = l.tryAcquire("hot");
          long t1 = System.nanoTime();
          long c1 = CPU.getCurrentThreadCpuTime();
          hotSync.record(d, t0, t1);
          if (d.reason() == Reason.STORE_UNAVAILABLE) {
            int i = sampled.getAndIncrement();
            if (i < unavailableWall.length) {
              unavailableWall[i] = t1 - t0;
              unavailableCpu[i] = c1 - c0;
            }
          }
          if (paced) {
            LockSupport.parkNanos(1_000_000);
          }
        });
      }
      spawn("hot-async", () -> {
        if (!window.tryAcquire(10, TimeUnit.MILLISECONDS)) {
          return;
        }
        long t0 = System.nanoTime();
        l.tryAcquireAsync("hot", 1).whenComplete((d, e) -> {
          window.release();
          if (e != null) {
            errors.add(e);
          } else {
            hotAsync.record(d, t0, System.nanoTime());
          }
        });
        if (paced) {
          LockSupport.parkNanos(50_000);
        }
      });
      spawn("cold-sync", () -> {
        long t0 = System.nanoTime();
        coldSync.record(l.tryAcquire("cold"), t0, System.nanoTime());
        LockSupport.parkNanos(1_000_000);
      });
      spawn("cold-async", () -> {
        long t0 = System.nanoTime();
        coldAsync.record(l.tryAcquireAsync("cold", 1).toCompletableFuture().join(), t0, System.nanoTime());
        LockSupport.parkNanos(1_000_000);
      });
    }

    private interface Step {
      void run() throws Exception;
    }

    private void spawn(String name, Step step) {
      Thread t = new Thread(() -> {
        while (running.get()) {
          try {
            step.run();
          } catch (Throwable e) {
            errors.add(e);
          }
        }
      }, name);
      t.setDaemon(true);
      t.start();
      threads.add(t);
    }

    /** What each kind of caller has been answered so far. */
    String counts() {
      return String.join("; ", Stream.of(hotSync, hotAsync, coldSync, coldAsync).map(w -> w.what + ": " + w.primary.get()
          + " on Redis, " + w.failed.get() + " failed (last " + w.lastFailure() + ")").toList());
    }

    /** From now on each caller pauses between decisions. */
    void pace() {
      paced = true;
    }

    long failed() {
      return hotSync.failed.get() + hotAsync.failed.get() + coldSync.failed.get() + coldAsync.failed.get();
    }

    void watchFrom(long t) {
      for (Watch w : List.of(hotSync, hotAsync, coldSync, coldAsync)) {
        w.watchFrom(t);
      }
    }

    /** Polls until every kind of caller on every key decided on Redis after {@code backAt} (5 s at most), then asserts how soon. */
    void assertEveryKeyBackWithin(long backAt, String fault) throws InterruptedException {
      List<Watch> all = List.of(hotSync, hotAsync, coldSync, coldAsync);
      long deadline = backAt + TimeUnit.SECONDS.toNanos(5);
      while (!all.stream().allMatch(Watch::back) && System.nanoTime() < deadline) {
        Thread.sleep(1);
      }
      // The first decision on Redis, of any caller on any key: the limiter's connection is back.
      long reconnected = all.stream().filter(Watch::back).mapToLong(w -> w.firstPrimary.get() - backAt).min().orElse(Long.MAX_VALUE);
      long bound = Math.max(TimeUnit.MILLISECONDS.toNanos(RECOVERY_MILLIS),
          reconnected + TimeUnit.MILLISECONDS.toNanos(RECONNECT_SLACK_MILLIS));
      int n = Math.min(sampled.get(), unavailableWall.length);
      long[] wall = Arrays.copyOf(unavailableWall, n);
      long[] cpu = Arrays.copyOf(unavailableCpu, n);
      Arrays.sort(wall);
      Arrays.sort(cpu);
      String recovery = String.join("; ", all.stream().map(w -> w.recovery(backAt)).toList())
          + " (bound " + bound / 1_000_000 + " ms)";
      System.out.println("lane wedge, " + fault + ", on Redis again after the store's return: " + recovery
          + "; " + n + " sync STORE_UNAVAILABLE decisions on the hot key, wall p50/p99/max " + millis(wall, 0.5) + "/"
          + millis(wall, 0.99) + "/" + millis(wall, 1) + " ms, caller CPU p99/max " + millis(cpu, 0.99) + "/" + millis(cpu, 1)
          + " ms; load average " + ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
      for (Watch w : all) {
        assertThat(w.back()).as("%s after %s: on Redis within 5 s of the store's return (%s)", w.what, fault, recovery).isTrue();
      }
      assertThat(reconnected).as("the limiter's connection back after %s (%s)", fault, recovery)
          .isLessThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(RECONNECT_MILLIS));
      for (Watch w : all) {
        assertThat(w.firstPrimary.get() - backAt).as("%s after %s (%s)", w.what, fault, recovery).isLessThanOrEqualTo(bound);
      }
      assertThat(n).as("sync STORE_UNAVAILABLE decisions on the hot key while the store was away").isPositive();
      assertThat(wall[(n - 1) / 2]).as("median STORE_UNAVAILABLE decision, ns")
          .isLessThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(UNAVAILABLE_P50_MILLIS));
      assertThat(cpu[n - 1]).as("most CPU a STORE_UNAVAILABLE decision took on its caller's thread, ns")
          .isLessThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(UNAVAILABLE_CPU_MILLIS));
      assertThat(errors).as("no exception reaches a caller").isEmpty();
    }

    private static String millis(long[] sorted, double q) {
      return sorted.length == 0 ? "-" : String.format("%.2f", sorted[(int) Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] / 1e6);
    }

    /** Stops the callers, then closes the limiter and its client. */
    @Override public void close() throws InterruptedException {
      running.set(false);
      for (Thread t : threads) {
        t.join(5_000);
      }
      limiter.close();
      client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }
  }
}
