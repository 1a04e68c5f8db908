package dev.sluice.compose;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Decision;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.RateLimiters;
import dev.sluice.Reason;
import dev.sluice.Ticker;
import dev.sluice.memory.MemoryRateLimiter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class WaitingLimiterTest {
  final ManualTicker ticker = ManualTicker.at(CompositionTest.T0);
  final List<Long> parks = new ArrayList<>();

  /** Parks by moving the manual clock: the test waits for nothing. */
  WaitingLimiter waiting(MemoryRateLimiter limiter) {
    return WaitingLimiter.builder(limiter).parker(micros -> {
      parks.add(micros);
      ticker.advanceMicros(micros);
    }).build();
  }

  @Test
  void returnsRefusedAtOnceWhenTheRetryAlreadyExceedsMaxWait() {
    MemoryRateLimiter limiter = Legs.memory(Policy.fixedWindow("login", 1, Duration.ofMinutes(1)), ticker);
    // The real parker: if this call parked at all it would sleep for a minute.
    WaitingLimiter w = RateLimiters.waiting(limiter);
    assertThat(w.acquire("acct", 1, Duration.ofSeconds(10)).allowed()).isTrue();

    long t0 = System.nanoTime();
    Decision d = w.acquire("acct", 1, Duration.ofSeconds(10));
    long elapsedNanos = System.nanoTime() - t0;

    assertThat(d.allowed()).isFalse();
    assertThat(d.retryAfter()).isEqualTo(Duration.ofMinutes(1));
    assertThat(elapsedNanos).as("did not park: far below maxWait").isLessThan(TimeUnit.MILLISECONDS.toNanos(500));
    assertThat(ticker.nowMicros()).isEqualTo(CompositionTest.T0);
  }

  @Test
  void waitsExactlyTheRetryAfterWhenItFitsInMaxWait() {
    MemoryRateLimiter limiter = Legs.memory(Policy.fixedWindow("api", 2, Duration.ofSeconds(1)), ticker);
    WaitingLimiter w = waiting(limiter);
    limiter.tryAcquire("k", 2);
    ticker.advance(Duration.ofMillis(300));

    Decision d = w.acquire("k", 1, Duration.ofSeconds(2));

    assertThat(d.allowed()).isTrue();
    assertThat(parks).containsExactly(700_000L);
  }

  @Test
  void givesUpAtTheDeadlineWhenOthersKeepTakingThePermits() {
    MemoryRateLimiter limiter = Legs.memory(Policy.fixedWindow("api", 1, Duration.ofSeconds(1)), ticker);
    WaitingLimiter w = WaitingLimiter.builder(limiter).parker(micros -> {
      parks.add(micros);
      ticker.advanceMicros(micros);
      limiter.tryAcquire("k", 1); // a competitor wins every new window
    }).build();
    limiter.tryAcquire("k", 1);

    Decision d = w.acquire("k", 1, Duration.ofMillis(3500));

    assertThat(d.allowed()).isFalse();
    assertThat(parks).containsExactly(1_000_000L, 1_000_000L, 1_000_000L);
    assertThat(ticker.nowMicros() - CompositionTest.T0).isLessThanOrEqualTo(3_500_000L);
  }

  @Test
  void doesNotWaitOutAStoreFailure() {
    WaitingLimiter w = WaitingLimiter.builder(new Legs.Throwing(Policy.fixedWindow("x", 1, Duration.ofSeconds(1)), new IllegalStateException()) {
      @Override public Decision tryAcquire(String key, long permits, Policy p) {
        return Decision.refused(p, Reason.STORE_UNAVAILABLE, 0, 0, 1_000);
      }
    }).parker(micros -> parks.add(micros)).build();
    assertThat(w.acquire("k", 1, Duration.ofMinutes(1)).reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
    assertThat(parks).isEmpty();
  }

  @Test
  void badMaxWaitIsRefused() {
    WaitingLimiter w = waiting(Legs.memory(Policy.fixedWindow("api", 1, Duration.ofSeconds(1)), ticker));
    assertThatThrownBy(() -> w.acquire("k", 1, Duration.ofMillis(-1))).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxWait PT-0.001S is negative; use Duration.ZERO to never wait");
    assertThatThrownBy(() -> w.acquire("k", 1, null)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("maxWait is null");
    assertThatThrownBy(() -> w.acquire("k", 2, Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("permits 2 exceeds 1");
    assertThatThrownBy(() -> w.acquireAsync(null, 1, Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("key is null");
  }

  @Test
  void acquireAsyncCompletesWhenAdmittedFromTheSchedulerWithoutHoldingTheCaller() throws Exception {
    // The scheduler waits in real time, the limiter's clock is the test's: only the test rolls the
    // window. (On real time a starved machine rolled it before the first assertion, or before the
    // last call.) A retry that fires before the roll is refused and scheduled again.
    MemoryRateLimiter limiter = MemoryRateLimiter.builder(Policy.fixedWindow("async", 1, Duration.ofMillis(150))).ticker(ticker).build();
    ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor(r -> new Thread(r, "test-scheduler"));
    try {
      WaitingLimiter w = WaitingLimiter.builder(limiter).scheduler(scheduler).build();
      assertThat(limiter.tryAcquire("k").allowed()).isTrue();
      AtomicReference<String> completedOn = new AtomicReference<>();

      CompletableFuture<Decision> f = w.acquireAsync("k", 1, Duration.ofSeconds(5)).toCompletableFuture();
      assertThat(f).as("the caller got its future back before the window rolled").isNotDone();
      f.thenRun(() -> completedOn.compareAndSet(null, Thread.currentThread().getName()));
      ticker.advance(Duration.ofMillis(150));

      Decision d = f.get(5, TimeUnit.SECONDS);
      assertThat(d.allowed()).isTrue();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
      while (completedOn.get() == null && System.nanoTime() < deadline) {
        Thread.onSpinWait();
      }
      assertThat(completedOn.get()).isIn("test-scheduler", Thread.currentThread().getName());

      // And when the retry is longer than the wait, the future is already complete, refused.
      CompletableFuture<Decision> g = w.acquireAsync("k", 1, Duration.ofMillis(1)).toCompletableFuture();
      assertThat(g).isDone();
      assertThat(g.get().allowed()).isFalse();
    } finally {
      scheduler.shutdownNow();
    }
  }
}
