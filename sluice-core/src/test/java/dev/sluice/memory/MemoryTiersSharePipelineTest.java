package dev.sluice.memory;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.ClockedRateLimiter;
import dev.sluice.Decision;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.internal.Checks;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;
import org.junit.jupiter.api.Test;

/**
 * Issue 28, item 2: the memory tiers take validation, the clock rule, ticket spending and listener
 * events from the same code as the store path. Each test is named after the disagreement it fixed.
 */
class MemoryTiersSharePipelineTest {
  private static final long T0 = 1_700_000_000_000_000L;
  private static final Policy P = Policy.fixedWindow("p", 10, Duration.ofMinutes(1));
  private static final long[] BAD_CLOCKS = {0, -5, Checks.MAX_CLOCK + 1};

  private static List<BiFunction<ManualTicker, RateLimitListener, ClockedRateLimiter>> tiers() {
    return List.of(
        (t, l) -> MemoryRateLimiter.builder(P).ticker(t).listener(l, true).build(),
        (t, l) -> HashedSlotRateLimiter.builder(P, 64).ticker(t).listener(l, true).build(),
        (t, l) -> CeilingRateLimiter.builder(MemoryRateLimiter.builder(P).ticker(t).build(), Policy.fixedWindow("all", 100,
            Duration.ofMinutes(1))).listener(l, true).build());
  }

  @Test
  void hashedSlotsAndTheCeilingEmittedNoListenerEvents() {
    for (var tier : tiers()) {
      Counting heard = new Counting();
      ClockedRateLimiter l = tier.apply(ManualTicker.at(T0), heard);
      Decision a = l.tryAcquire("k", 10);
      l.tryAcquire("k", 1);
      l.peek("k");
      l.refund(a.ticket().orElseThrow());
      l.settle(l.tryAcquire("k", 4).ticket().orElseThrow(), 6);
      String name = l.getClass().getSimpleName();
      assertThat(heard.decisions).as("%s: decisions (a peek is none)", name).hasValue(3);
      assertThat(heard.refusals).as("%s: refusals", name).hasValue(1);
      assertThat(heard.keys).as("%s: keys opted in", name).containsOnly("k");
      assertThat(heard.refunds).as("%s: refunds", name).containsExactly(Refund.APPLIED);
      assertThat(heard.settlements).as("%s: settlements", name).containsExactly(Settlement.APPLIED);
    }
  }

  @Test
  void aSettlementOnABadClockSpentItsTicketAndAnsweredNoEffect() {
    for (var tier : tiers()) {
      ManualTicker t = ManualTicker.at(T0);
      ClockedRateLimiter l = tier.apply(t, RateLimitListener.NONE);
      Ticket ticket = l.tryAcquire("k", 4).ticket().orElseThrow();
      for (long bad : BAD_CLOCKS) {
        assertThat(l.settleAt(ticket, 1, bad)).as("%s at %d", l.getClass().getSimpleName(), bad).isEqualTo(Settlement.FAILED);
        assertThat(l.settleAt(ticket, 9, bad)).as("%s at %d", l.getClass().getSimpleName(), bad).isEqualTo(Settlement.FAILED);
        assertThat(ticket.isSpent()).isFalse();
      }
      assertThat(l.settle(ticket, 1)).isEqualTo(Settlement.APPLIED);
      assertThat(l.peek("k").remaining()).isEqualTo(9);
    }
  }

  @Test
  void aRefundOnABadClockAnsweredNoEffectWhereTheStorePathFails() {
    for (var tier : tiers()) {
      ManualTicker t = ManualTicker.at(T0);
      ClockedRateLimiter l = tier.apply(t, RateLimitListener.NONE);
      Ticket ticket = l.tryAcquire("k", 4).ticket().orElseThrow();
      for (long bad : BAD_CLOCKS) {
        assertThat(l.refundAt(ticket, bad)).as("%s at %d", l.getClass().getSimpleName(), bad).isEqualTo(Refund.FAILED);
        assertThat(ticket.isSpent()).isFalse();
      }
      assertThat(l.refund(ticket)).isEqualTo(Refund.APPLIED);
      assertThat(l.peek("k").remaining()).isEqualTo(10);
    }
  }

  /** Counts what a listener hears. */
  private static final class Counting implements RateLimitListener {
    final AtomicInteger decisions = new AtomicInteger();
    final AtomicInteger refusals = new AtomicInteger();
    final Set<String> keys = ConcurrentHashMap.newKeySet();
    final List<Refund> refunds = new CopyOnWriteArrayList<>();
    final List<Settlement> settlements = new CopyOnWriteArrayList<>();

    @Override public void onDecision(Decision d, String key) {
      decisions.incrementAndGet();
      keys.add(key);
    }

    @Override public void onRefusal(Decision d, String key) {
      refusals.incrementAndGet();
    }

    @Override public void onRefund(Policy policy, Refund r) {
      refunds.add(r);
    }

    @Override public void onSettle(Policy policy, Settlement r) {
      settlements.add(r);
    }
  }
}
