package dev.sluice.compose;

import dev.sluice.ClockedRateLimiter;
import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Ticker;
import dev.sluice.internal.Checks;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Waiting for permits, bounded: {@link #acquire} waits at most {@code maxWait} for {@code permits},
 * and {@link #acquireAsync} completes when they are admitted without holding any thread meanwhile.
 *
 * <p><b>Never parks for nothing.</b> Each refusal carries a {@code retryAfter}. When it already
 * exceeds the wait left, the refusal is returned at once: the caller learns now what it would
 * otherwise have learned at the end of {@code maxWait}. Otherwise the thread parks for exactly
 * {@code retryAfter} and tries again (another caller may have taken the permits meanwhile, so a
 * retry can be refused again; the loop ends at the deadline).
 *
 * <p>Only rate refusals ({@link Reason#LIMIT_EXCEEDED}, {@link Reason#KEY_TABLE_FULL}) are waited
 * on. A store failure is returned at once: waiting out an outage would pile up parked threads
 * exactly when the system is least able to afford them.
 *
 * <p>The deadline is measured on the limiter's ticker (when it is clocked) and, as a backstop, by the
 * sum of the waits, so a ticker that does not move (a test's) cannot make the loop run forever.
 */
public final class WaitingLimiter {
  /** Parks the calling thread; replaceable in tests (to advance a manual ticker instead of sleeping). */
  @FunctionalInterface
  public interface Parker {
    void park(long micros) throws InterruptedException;
  }

  private final RateLimiter limiter;
  private final Ticker ticker;
  private final Parker parker;
  private final ScheduledExecutorService scheduler;

  private WaitingLimiter(Builder b) {
    this.limiter = b.limiter;
    this.ticker = b.ticker != null ? b.ticker : b.limiter instanceof ClockedRateLimiter c ? c.ticker() : Ticker.system();
    this.parker = b.parker;
    this.scheduler = b.scheduler;
  }

  public static Builder builder(RateLimiter limiter) {
    return new Builder(Checks.notNull("limiter", limiter));
  }

  public RateLimiter limiter() {
    return limiter;
  }

  /** {@link #acquire(String, long, Policy, Duration)} under the limiter's default policy. */
  public Decision acquire(String key, long permits, Duration maxWait) {
    return acquire(key, permits, limiter.policy(), maxWait);
  }

  /**
   * Spends {@code permits}, waiting at most {@code maxWait} for them. Returns the admitting decision,
   * or the last refusal: at once when its {@code retryAfter} exceeds the wait left, or at the deadline.
   * An interrupt ends the wait with the last refusal and the thread's interrupt flag set.
   */
  public Decision acquire(String key, long permits, Policy policy, Duration maxWait) {
    long budget = budget(maxWait);
    long start = ticker.nowMicros();
    long waited = 0;
    while (true) {
      Decision d = limiter.tryAcquire(key, permits, policy);
      if (d.allowed() || !waitable(d)) {
        return d;
      }
      long left = budget - Math.max(waited, ticker.nowMicros() - start);
      long retry = d.retryAfterMicros();
      if (retry > left) {
        return d;
      }
      try {
        parker.park(retry);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return d;
      }
      waited += retry;
    }
  }

  /** {@link #acquireAsync(String, long, Policy, Duration)} under the limiter's default policy. */
  public CompletionStage<Decision> acquireAsync(String key, long permits, Duration maxWait) {
    return acquireAsync(key, permits, limiter.policy(), maxWait);
  }

  /**
   * The asynchronous {@link #acquire}: completes with the admitting decision or the last refusal.
   * Between tries nothing waits on a thread: the next try is a task on the scheduler, due after the
   * refusal's {@code retryAfter}. Programmer errors throw here, at once.
   */
  public CompletionStage<Decision> acquireAsync(String key, long permits, Policy policy, Duration maxWait) {
    long budget = budget(maxWait);
    long start = ticker.nowMicros();
    CompletableFuture<Decision> result = new CompletableFuture<>();
    CompletionStage<Decision> first = limiter.tryAcquireAsync(key, permits, policy);
    first.whenComplete((d, err) -> next(result, d, err, key, permits, policy, budget, start, 0));
    return result;
  }

  private void next(CompletableFuture<Decision> result, Decision d, Throwable err, String key, long permits,
                    Policy policy, long budget, long start, long waited) {
    if (err != null) {
      result.completeExceptionally(err);
      return;
    }
    if (d.allowed() || !waitable(d)) {
      result.complete(d);
      return;
    }
    long left = budget - Math.max(waited, ticker.nowMicros() - start);
    long retry = d.retryAfterMicros();
    if (retry > left) {
      result.complete(d);
      return;
    }
    try {
      scheduler.schedule(() -> {
        try {
          limiter.tryAcquireAsync(key, permits, policy)
              .whenComplete((d2, e2) -> next(result, d2, e2, key, permits, policy, budget, start, waited + retry));
        } catch (RuntimeException e) {
          result.completeExceptionally(e);
        }
      }, retry, TimeUnit.MICROSECONDS);
    } catch (RejectedExecutionException e) {
      result.completeExceptionally(e);
    }
  }

  private static boolean waitable(Decision d) {
    return d.reason() == Reason.LIMIT_EXCEEDED || d.reason() == Reason.KEY_TABLE_FULL;
  }

  private static long budget(Duration maxWait) {
    if (maxWait == null) {
      throw new IllegalArgumentException("maxWait is null; give a duration (Duration.ZERO never waits)");
    }
    if (maxWait.isNegative()) {
      throw new IllegalArgumentException("maxWait " + maxWait + " is negative; use Duration.ZERO to never wait");
    }
    try {
      return Math.multiplyExact(maxWait.getSeconds(), 1_000_000L) + maxWait.getNano() / 1_000;
    } catch (ArithmeticException e) {
      return Long.MAX_VALUE;
    }
  }

  /** The scheduler used when none is given: one daemon thread, created on first use, shared. */
  private static final class DefaultScheduler {
    static final ScheduledExecutorService INSTANCE;

    static {
      ScheduledThreadPoolExecutor s = new ScheduledThreadPoolExecutor(1, r -> {
        Thread t = new Thread(r, "sluice-waiting");
        t.setDaemon(true);
        return t;
      });
      s.setRemoveOnCancelPolicy(true);
      INSTANCE = s;
    }
  }

  public static final class Builder {
    private final RateLimiter limiter;
    private Ticker ticker;
    private Parker parker = micros -> TimeUnit.MICROSECONDS.sleep(micros);
    private ScheduledExecutorService scheduler;

    private Builder(RateLimiter limiter) {
      this.limiter = limiter;
    }

    /** The clock the deadline is measured on (default: the limiter's if clocked, else {@link Ticker#system()}). */
    public Builder ticker(Ticker ticker) {
      this.ticker = Checks.notNull("ticker", ticker);
      return this;
    }

    /** How a synchronous wait parks (default {@link TimeUnit#sleep}). */
    public Builder parker(Parker parker) {
      this.parker = Checks.notNull("parker", parker);
      return this;
    }

    /** Where asynchronous retries are scheduled (default: one shared daemon thread). */
    public Builder scheduler(ScheduledExecutorService scheduler) {
      this.scheduler = Checks.notNull("scheduler", scheduler);
      return this;
    }

    public WaitingLimiter build() {
      if (scheduler == null) {
        scheduler = DefaultScheduler.INSTANCE;
      }
      return new WaitingLimiter(this);
    }
  }
}
