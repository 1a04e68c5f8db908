package dev.sluice.compose;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Decision;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Ticker;
import dev.sluice.memory.MemoryRateLimiter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Issue 28, item 4: all of several limits, each charge its own limiter, key, permits and policy. */
class AllOfTest {
  private static final long T0 = 1_700_000_000_000_000L;
  private final ManualTicker t = ManualTicker.at(T0);
  private final Policy user = Policy.fixedWindow("user", 10, Duration.ofMinutes(1));
  private final Policy tenant = Policy.fixedWindow("tenant", 12, Duration.ofMinutes(1));
  private final MemoryRateLimiter a = MemoryRateLimiter.builder(user).ticker(t).build();
  private final MemoryRateLimiter b = MemoryRateLimiter.builder(tenant).ticker(t).build();

  @Test
  void eachChargeIsItsOwnKeyAndPermitsAndARefusalLeavesNoneCharged() {
    AllOf.Result r = AllOf.charge(List.of(AllOf.Charge.of(a, "alice", 4), AllOf.Charge.of(b, "acme", 9)));
    assertThat(r.allowed()).isTrue();
    assertThat(r.legs()).extracting(Decision::remaining).containsExactly(6L, 3L);
    assertThat(r.decision().remaining()).as("the most restrictive leg").isEqualTo(3);
    AllOf.Result refused = AllOf.charge(List.of(AllOf.Charge.of(a, "alice", 2), AllOf.Charge.of(b, "acme", 4)));
    assertThat(refused.allowed()).isFalse();
    assertThat(refused.decision().reason()).isEqualTo(Reason.LIMIT_EXCEEDED);
    assertThat(refused.decision().policy()).isEqualTo(tenant);
    assertThat(a.peek("alice").remaining()).as("the allowed leg is not left charged").isEqualTo(6);
    assertThat(r.refund()).isEqualTo(Refund.APPLIED);
    assertThat(a.peek("alice").remaining()).isEqualTo(10);
    assertThat(b.peek("acme").remaining()).isEqualTo(12);
    assertThat(r.refund()).as("once").isEqualTo(Refund.NO_EFFECT);
  }

  @Test
  void aLegOnNoClockIsNotAskedWhenAClockedLegsPreflightRefusesAndIsChargedFirstOtherwise() {
    SharedStateTest.Store unclocked = new SharedStateTest.Store(MemoryRateLimiter.builder(tenant).ticker(t).build());
    a.tryAcquire("bob", 10);
    AllOf.Result r = AllOf.charge(List.of(AllOf.Charge.of(a, "bob", 1), AllOf.Charge.of(unclocked, "acme", 5)));
    assertThat(r.allowed()).isFalse();
    assertThat(unclocked.calls).as("the clocked leg's peek refused: nothing else asked").hasValue(0);
    assertThat(r.legs().get(1)).isNull();
    unclocked.tryAcquire("acme", 12);
    AllOf.Result first = AllOf.charge(List.of(AllOf.Charge.of(a, "carol", 1), AllOf.Charge.of(unclocked, "acme", 1)));
    assertThat(first.allowed()).isFalse();
    assertThat(first.legs().get(0).ticket()).as("the clocked leg: its pre-flight peek, never charged").isEmpty();
    assertThat(a.peek("carol").remaining()).isEqualTo(10);
  }

  @Test
  void badChargesAreRefusedWithTheirRule() {
    assertThatThrownBy(() -> AllOf.charge(List.of())).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("charges is empty; an all-of call needs at least one charge");
    assertThatThrownBy(() -> AllOf.charge(List.of(AllOf.Charge.of(a, "x", 1), AllOf.Charge.of(b, "y", 13))))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(a.peek("x").remaining()).as("refunded before the programmer error reached the caller").isEqualTo(10);
  }

  /** 16 threads charge two legs of different limits: exactly the smaller is admitted, and both legs count exactly that. */
  @Test
  void sixteenThreadsAdmitExactlyTheTighterLegAndLeaveNoPartialCharge() throws Exception {
    Policy wide = Policy.fixedWindow("wide", 1_000, Duration.ofMinutes(1));
    Policy narrow = Policy.fixedWindow("narrow", 300, Duration.ofMinutes(1));
    MemoryRateLimiter w = MemoryRateLimiter.builder(wide).ticker(t).build();
    MemoryRateLimiter n = MemoryRateLimiter.builder(narrow).ticker(t).build();
    AtomicInteger admitted = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(16);
    CountDownLatch start = new CountDownLatch(1);
    List<Future<?>> fs = new ArrayList<>();
    for (int i = 0; i < 16; i++) {
      fs.add(pool.submit(() -> {
        start.await();
        for (int j = 0; j < 50; j++) {
          if (AllOf.charge(List.of(AllOf.Charge.of(w, "k", 1), AllOf.Charge.of(n, "k", 1))).allowed()) {
            admitted.incrementAndGet();
          }
        }
        return null;
      }));
    }
    start.countDown();
    for (Future<?> f : fs) {
      f.get(30, TimeUnit.SECONDS);
    }
    pool.shutdown();
    assertThat(admitted).hasValue(300);
    assertThat(w.peek("k").remaining()).as("the wide leg charged only for admitted calls").isEqualTo(700);
    assertThat(n.peek("k").remaining()).isZero();
  }
}
