package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAccumulator;

/**
 * A private Redis frozen with SIGSTOP for 2 s under 16 threads deciding on one key: every decision
 * returns within the limiter's deadline plus {@link dev.sluice.tck.FaultContract#MARGIN}, and once the
 * server is back the key was charged exactly once per admitted acquire, plus at most once per
 * acquire that failed with an unknown outcome (a timeout: the script may have run at the thaw), never
 * twice. For the other clients' modules, through the test-jar.
 */
public final class FreezeRun {
  public static final int THREADS = 16;
  public static final Duration FROZEN = Duration.ofSeconds(2);
  public static final Duration DEADLINE = Duration.ofMillis(100);
  private static final long LIMIT = 1_000_000;

  private FreezeRun() {}

  /**
   * The run: {@code limiters} builds a limiter with a policy and a deadline, connected
   * to {@code server} (the run builds one with a 5 s deadline to read the budget with). Prints its figures.
   */
  public static void run(RedisServerProcess server, String label, Limiters limiters) throws Exception {
    Policy p = Policy.fixedWindow("freeze-" + UUID.randomUUID().toString().substring(0, 8), LIMIT, Duration.ofHours(1));
    RateLimiter l = limiters.build(p, DEADLINE);
    RateLimiter direct = limiters.build(p, Duration.ofSeconds(5));
    try {
      assertThat(l.tryAcquire("k").path()).as("the store answers before the freeze").isEqualTo(Path.PRIMARY);
      AtomicBoolean stop = new AtomicBoolean();
      AtomicLong allowed = new AtomicLong(1);
      AtomicLong unknown = new AtomicLong();
      AtomicLong decisions = new AtomicLong();
      LongAccumulator worst = new LongAccumulator(Math::max, 0);
      Thread[] threads = new Thread[THREADS];
      for (int t = 0; t < THREADS; t++) {
        threads[t] = new Thread(() -> {
          while (!stop.get()) {
            long start = System.nanoTime();
            Decision d = l.tryAcquire("k");
            worst.accumulate(System.nanoTime() - start);
            decisions.incrementAndGet();
            if (d.allowed() && d.path() == Path.PRIMARY) {
              allowed.incrementAndGet();
            } else if (d.reason() == Reason.TIMEOUT || d.reason() == Reason.STORE_UNAVAILABLE) {
              unknown.incrementAndGet();
            } else {
              throw new AssertionError("unexpected decision under a freeze: " + d);
            }
          }
        });
        threads[t].start();
      }
      long until = System.nanoTime() + 300_000_000L;
      while (System.nanoTime() < until) {
        java.util.concurrent.locks.LockSupport.parkNanos(1_000_000); // the threads decide on a live store first
      }
      server.freeze();
      long thawAt = System.nanoTime() + FROZEN.toNanos();
      while (System.nanoTime() < thawAt) {
        java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
      }
      server.thaw();
      long back = System.nanoTime();
      long recovered = -1;
      long patience = back + 10_000_000_000L;
      while (recovered < 0 && System.nanoTime() < patience) {
        if (direct.peek("probe").path() == Path.PRIMARY) {
          recovered = System.nanoTime() - back;
        }
      }
      long tail = System.nanoTime() + 500_000_000L;
      while (System.nanoTime() < tail) {
        java.util.concurrent.locks.LockSupport.parkNanos(1_000_000); // and on the store again after the thaw
      }
      stop.set(true);
      for (Thread t : threads) {
        t.join();
      }
      long before = allowed.get();
      long least = before;
      long charged = -1;
      long settle = System.nanoTime() + 5_000_000_000L;
      while (System.nanoTime() < settle) { // scripts held by the frozen server run at the thaw: poll until they have
        charged = LIMIT - direct.peek("k").remaining();
        if (charged >= least) {
          break;
        }
      }
      System.out.printf("freeze %s: %d decisions by %d threads over a %d ms SIGSTOP; worst %.1f ms (deadline %d ms + margin %d ms);"
              + " allowed %d, unknown %d, charged %d; the store answered %.1f ms after SIGCONT%n", label, decisions.get(), THREADS,
          FROZEN.toMillis(), worst.get() / 1e6, DEADLINE.toMillis(), dev.sluice.tck.FaultContract.MARGIN.toMillis(),
          allowed.get(), unknown.get(), charged, recovered / 1e6);
      assertThat(recovered).as("the store answered within 10 s of SIGCONT").isNotNegative();
      assertThat(worst.get()).as("worst decision, ns").isLessThanOrEqualTo(DEADLINE.plus(dev.sluice.tck.FaultContract.MARGIN).toNanos());
      assertThat(unknown.get()).as("decisions the freeze failed").isPositive();
      assertThat(charged).as("charged: once per allowed, at most once per unknown").isBetween(allowed.get(), allowed.get() + unknown.get());
    } finally {
      server.thaw();
      for (RateLimiter r : new RateLimiter[] {l, direct}) {
        if (r instanceof AutoCloseable c) {
          c.close();
        }
      }
    }
  }

  /** Builds a limiter with the run's policy and deadline on the frozen server. */
  @FunctionalInterface
  public interface Limiters {
    RateLimiter build(Policy policy, Duration timeout) throws Exception;
  }

}
