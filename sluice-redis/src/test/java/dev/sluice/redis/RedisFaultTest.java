package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.memory.MemoryRateLimiter;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Faults on a private redis-server (port 7110): stopped, frozen with SIGSTOP, killed and restarted
 * under load. Asserted for each failure mode: no exception, every decision within the deadline plus a
 * small margin, the mode obeyed (closed refuses with the reason, open allows and alerts, fallback serves
 * from the local limiter and says so), and recovery within a second of the server coming back.
 */
class RedisFaultTest {
  private static final Duration TIMEOUT = Duration.ofMillis(100);
  /** Scheduling slack on a 2-core machine shared by parallel builds. */
  private static final long MARGIN_NANOS = TimeUnit.MILLISECONDS.toNanos(150);
  private static final long LIMIT_NANOS = TIMEOUT.toNanos() + MARGIN_NANOS;

  private RedisServerProcess server;
  private RedisClient client;
  private final List<RedisRateLimiter> limiters = new ArrayList<>();
  private final AtomicInteger alerts = new AtomicInteger();
  private final ConcurrentLinkedQueue<Reason> alertReasons = new ConcurrentLinkedQueue<>();
  private Policy policy;
  private RedisRateLimiter closed;
  private RedisRateLimiter open;
  private RedisRateLimiter fallback;

  @BeforeEach void start() throws Exception {
    server = RedisServerProcess.start(7110);
    RedisURI uri = RedisURI.create(server.uri());
    uri.setTimeout(Duration.ofSeconds(2));
    client = RedisClient.create(uri);
    policy = Policy.fixedWindow("fault-" + UUID.randomUUID().toString().substring(0, 8), 5, Duration.ofMinutes(10));
    closed = limiter(FailureMode.closed());
    open = limiter(FailureMode.open((p, reason, cause) -> {
      alerts.incrementAndGet();
      alertReasons.add(reason);
    }));
    fallback = limiter(FailureMode.fallback(MemoryRateLimiter.builder(policy).build()));
    for (RedisRateLimiter l : limiters) {
      assertThat(l.tryAcquire("warm").path()).isEqualTo(Path.PRIMARY);
    }
  }

  private RedisRateLimiter limiter(FailureMode mode) {
    RedisRateLimiter l = RedisRateLimiter.builder(policy, client).timeout(TIMEOUT).failureMode(mode).build();
    limiters.add(l);
    return l;
  }

  @AfterEach void stop() throws Exception {
    limiters.forEach(RedisRateLimiter::close);
    client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    server.close();
  }

  /** Runs one decision, asserting it returns (no exception) within the deadline plus the margin. */
  private static Decision timed(String what, Supplier<Decision> call) {
    long t0 = System.nanoTime();
    Decision d = call.get();
    long took = System.nanoTime() - t0;
    assertThat(took).as("%s took %d ms; deadline %s + margin", what, took / 1_000_000, TIMEOUT).isLessThanOrEqualTo(LIMIT_NANOS);
    return d;
  }

  private static Decision timedAsync(String what, RedisRateLimiter l, String key) {
    return timed(what, () -> l.tryAcquireAsync(key, 1).toCompletableFuture().join());
  }

  /** Every failure mode obeyed while the store cannot answer; {@code expected} is the reason closed gives. */
  private void assertModesObeyed(Reason... expected) {
    int alertsBefore = alerts.get();
    for (int i = 0; i < 5; i++) {
      for (Decision d : List.of(timed("closed", () -> closed.tryAcquire("c")), timedAsync("closed async", closed, "c"))) {
        assertThat(d.allowed()).isFalse();
        assertThat(d.reason()).isIn((Object[]) expected);
        assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
        assertThat(d.retryAfter()).isGreaterThanOrEqualTo(Duration.ofMillis(1));
      }
      for (Decision d : List.of(timed("open", () -> open.tryAcquire("o")), timedAsync("open async", open, "o"))) {
        assertThat(d.allowed()).isTrue();
        assertThat(d.reason()).isIn((Object[]) expected);
        assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
        assertThat(d.ticket()).isEmpty();
      }
    }
    assertThat(alerts.get() - alertsBefore).as("the alert hook is called for each fail-open decision").isEqualTo(10);
    assertThat(alertReasons).allMatch(r -> List.of(expected).contains(r));
    // Fallback: the local memory limiter decides, with the policy's limit of 5 per key, and says so.
    String key = "f-" + System.nanoTime();
    for (int i = 0; i < 5; i++) {
      Decision d = i % 2 == 0 ? timed("fallback", () -> fallback.tryAcquire(key)) : timedAsync("fallback async", fallback, key);
      assertThat(d.allowed()).isTrue();
      assertThat(d.path()).isEqualTo(Path.FALLBACK);
      assertThat(d.remaining()).isEqualTo(4 - i);
    }
    Decision sixth = timed("fallback", () -> fallback.tryAcquire(key));
    assertThat(sixth.allowed()).isFalse();
    assertThat(sixth.reason()).isEqualTo(Reason.LIMIT_EXCEEDED);
    assertThat(sixth.path()).isEqualTo(Path.FALLBACK);
    assertThat(timed("fallback peek", () -> fallback.peek(key)).path()).isEqualTo(Path.FALLBACK);
    // A ticket the fallback issued goes back to the fallback limiter, not to Redis.
    String key2 = "g-" + System.nanoTime();
    Decision charged = fallback.tryAcquire(key2, 5);
    assertThat(charged.path()).isEqualTo(Path.FALLBACK);
    assertThat(fallback.refund(charged.ticket().orElseThrow())).isEqualTo(Refund.APPLIED);
    assertThat(fallback.tryAcquire(key2, 5).allowed()).as("the refund restored the local budget").isTrue();
  }

  /** After the server is back, every limiter decides on Redis again within a second, with no restart. */
  private void assertRecoversWithinASecond(long backAtNanos) throws InterruptedException {
    for (RedisRateLimiter l : limiters) {
      String key = "r-" + System.nanoTime();
      while (timed("recovering", () -> l.tryAcquire(key)).path() != Path.PRIMARY) {
        assertThat(System.nanoTime() - backAtNanos).as("recovery of %s", l).isLessThan(TimeUnit.SECONDS.toNanos(1));
        Thread.sleep(5);
      }
    }
    long took = System.nanoTime() - backAtNanos;
    System.out.println("recovered " + limiters.size() + " limiters " + took / 1_000_000 + " ms after the server came back");
    assertThat(took).isLessThan(TimeUnit.SECONDS.toNanos(1));
  }

  @Test void stoppedServer() throws Exception {
    server.stop();
    assertModesObeyed(Reason.STORE_UNAVAILABLE, Reason.TIMEOUT);
    // Reset never throws while Redis is away, and forgets the fallback's count for the key.
    String key = "reset-" + System.nanoTime();
    assertThat(fallback.tryAcquire(key, 5).path()).isEqualTo(Path.FALLBACK);
    assertThat(fallback.tryAcquire(key).allowed()).isFalse();
    fallback.reset(key);
    closed.reset(key);
    assertThat(fallback.tryAcquire(key).allowed()).isTrue();
    server.start();
    assertRecoversWithinASecond(System.nanoTime());
  }

  @Test void frozenServer() throws Exception {
    server.freeze();
    // The async path holds no thread: the call returns at once, the deadline timer completes it.
    long t0 = System.nanoTime();
    var pending = closed.tryAcquireAsync("async", 1).toCompletableFuture();
    assertThat(System.nanoTime() - t0).as("tryAcquireAsync returns without waiting").isLessThan(TimeUnit.MILLISECONDS.toNanos(50));
    assertThat(pending).isNotDone();
    assertThat(pending.get(LIMIT_NANOS, TimeUnit.NANOSECONDS).reason()).isEqualTo(Reason.TIMEOUT);
    assertModesObeyed(Reason.TIMEOUT);
    server.thaw();
    assertRecoversWithinASecond(System.nanoTime());
  }

  @Test void aLimiterBuiltWhileTheServerIsAwayDecidesAtOnceAndCatchesUp() throws Exception {
    server.stop();
    long t0 = System.nanoTime();
    RedisRateLimiter early = limiter(FailureMode.closed());
    assertThat(System.nanoTime() - t0).as("build() with the server down").isLessThan(TimeUnit.SECONDS.toNanos(1));
    Decision d = timed("no connection yet", () -> early.tryAcquire("k"));
    assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
    server.start();
    assertRecoversWithinASecond(System.nanoTime());

    server.freeze();
    t0 = System.nanoTime();
    RedisRateLimiter frozen = limiter(FailureMode.closed());
    long took = System.nanoTime() - t0;
    assertThat(took).as("build() against a frozen server waits at most 2 s").isLessThan(TimeUnit.MILLISECONDS.toNanos(2_500));
    assertThat(timed("frozen, no connection", () -> frozen.tryAcquire("k")).allowed()).isFalse();
    server.thaw();
    assertRecoversWithinASecond(System.nanoTime());
  }

  @Test void killedAndRestartedMidRun() throws Exception {
    AtomicBoolean running = new AtomicBoolean(true);
    AtomicLong worstNanos = new AtomicLong();
    AtomicLong primary = new AtomicLong();
    AtomicLong failed = new AtomicLong();
    AtomicLong lastPrimaryAt = new AtomicLong();
    ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 4; t++) {
      RedisRateLimiter l = limiters.get(t % 2 == 0 ? 0 : 2);
      int id = t;
      Thread th = new Thread(() -> {
        int i = 0;
        while (running.get()) {
          long t0 = System.nanoTime();
          try {
            Decision d = (i % 2 == 0) ? l.tryAcquire("load-" + id + "-" + i) : l.tryAcquireAsync("load-" + id + "-" + i, 1).toCompletableFuture().join();
            if (d.path() == Path.PRIMARY) {
              primary.incrementAndGet();
              lastPrimaryAt.set(System.nanoTime());
            } else {
              failed.incrementAndGet();
            }
          } catch (Throwable e) {
            errors.add(e);
          }
          worstNanos.accumulateAndGet(System.nanoTime() - t0, Math::max);
          i++;
          try {
            Thread.sleep(1);  // pacing: a steady load, not four threads spinning on two cores
          } catch (InterruptedException e) {
            return;
          }
        }
      });
      th.start();
      threads.add(th);
    }
    try {
      waitFor(() -> primary.get() > 50, "decisions on Redis before the kill");
      server.kill();
      long killedAt = System.nanoTime();
      waitFor(() -> failed.get() > 20 && System.nanoTime() - killedAt > TimeUnit.MILLISECONDS.toNanos(500),
          "half a second of decisions under the failure mode while the server is dead");
      server.start();
      long backAt = System.nanoTime();
      waitFor(() -> lastPrimaryAt.get() > backAt, "decisions on Redis after the restart");
      long recovered = lastPrimaryAt.get() - backAt;
      System.out.println("kill/restart: " + primary.get() + " primary, " + failed.get() + " failure-mode decisions; dead for "
          + (backAt - killedAt) / 1_000_000 + " ms; recovered " + recovered / 1_000_000 + " ms after restart; worst decision "
          + worstNanos.get() / 1_000_000 + " ms");
      assertThat(recovered).isLessThan(TimeUnit.SECONDS.toNanos(1));
    } finally {
      running.set(false);
      for (Thread th : threads) {
        th.join(5_000);
      }
    }
    assertThat(errors).as("no exception reaches the caller").isEmpty();
    assertThat(worstNanos.get()).as("worst decision").isLessThanOrEqualTo(LIMIT_NANOS);
    assertRecoversWithinASecond(System.nanoTime());
  }

  private static void waitFor(Supplier<Boolean> condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.get()) {
      assertThat(System.nanoTime()).as("waiting for %s", what).isLessThan(deadline);
      Thread.sleep(5);
    }
  }
}
