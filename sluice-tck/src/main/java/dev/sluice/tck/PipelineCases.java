package dev.sluice.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sluice.Decision;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticket;
import dev.sluice.internal.Checks;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The parts every tier shares (issue 28, item 2): a refund and a settlement treat a bad clock the
 * same way on every backend (the ticket kept, {@code FAILED}, a retry on a good clock applies it),
 * and every limiter reports its decisions, refunds and settlements to its listener, once each. Part
 * of {@link RateLimiterContract}.
 */
public abstract sealed class PipelineCases extends BoundCases permits OverrideCases {

  PipelineCases() {}

  /** The readings no limiter may decide on: zero, below zero, past {@link Checks#MAX_CLOCK}. */
  private static final long[] BAD_CLOCKS = {0, -1, Checks.MAX_CLOCK + 1};

  /**
   * Issue 28: the memory tiers answered {@code NO_EFFECT} to a refund on a bad clock, and a settlement
   * there spent its ticket, where a store-backed limiter answers {@code FAILED} and keeps it. Now every
   * backend: {@code FAILED}, the ticket unspent, the budget unchanged, and the retry on a good clock applies.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void aRefundOnABadClockFailsAndKeepsItsTicket(String algorithm) {
    Policy p = policy(alg(algorithm), 10);
    ManualTicker ticker = newTicker();
    long good = ticker.nowMicros();
    RateLimiter l = limiter(p, ticker);
    Ticket t = l.tryAcquire("clock", 4).ticket().orElseThrow();
    for (long bad : BAD_CLOCKS) {
      ticker.set(bad);
      assertThat(l.refund(t)).as("refund at %d", bad).isEqualTo(Refund.FAILED);
      assertThat(t.isSpent()).as("spent after a refund at %d", bad).isFalse();
    }
    ticker.set(good);
    assertThat(l.peek("clock").remaining()).as("nothing given back on a bad clock").isEqualTo(6);
    assertThat(l.refund(t)).isEqualTo(Refund.APPLIED);
    assertThat(l.peek("clock").remaining()).isEqualTo(10);
    assertThat(l.refund(t)).isEqualTo(Refund.NO_EFFECT);
  }

  /** Issue 28: as {@link #aRefundOnABadClockFailsAndKeepsItsTicket}, for settlements below and above the reservation. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void aSettlementOnABadClockFailsAndKeepsItsTicket(String algorithm) {
    assumeTrue(settles(), "backend does not settle");
    Policy p = policy(alg(algorithm), 10);
    ManualTicker ticker = newTicker();
    long good = ticker.nowMicros();
    RateLimiter l = limiter(p, ticker);
    Ticket under = l.tryAcquire("under", 4).ticket().orElseThrow();
    Ticket over = l.tryAcquire("over", 4).ticket().orElseThrow();
    for (long bad : BAD_CLOCKS) {
      ticker.set(bad);
      assertThat(l.settle(under, 1)).as("settlement of 4 at 1 at %d", bad).isEqualTo(Settlement.FAILED);
      assertThat(l.settle(over, 7)).as("settlement of 4 at 7 at %d", bad).isEqualTo(Settlement.FAILED);
      assertThat(under.isSpent() || over.isSpent()).as("spent after a settlement at %d", bad).isFalse();
    }
    ticker.set(good);
    assertThat(l.peek("under").remaining()).as("nothing settled on a bad clock").isEqualTo(6);
    assertThat(l.peek("over").remaining()).as("nothing settled on a bad clock").isEqualTo(6);
    assertThat(l.settle(under, 1)).isEqualTo(Settlement.APPLIED);
    assertThat(l.settle(over, 7)).isEqualTo(Settlement.APPLIED);
    assertThat(l.peek("under").remaining()).isEqualTo(9);
    assertThat(l.peek("over").remaining()).isEqualTo(3);
    assertThat(l.settle(under, 2)).isEqualTo(Settlement.NO_EFFECT);
  }

  /**
   * Issue 28: {@code HashedSlotRateLimiter} and {@code CeilingRateLimiter} told their listener
   * nothing. Every limiter reports each acquire once (a refusal also as a refusal), no peek, and each
   * refund and settlement with what it did; the key only when opted in.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void everyDecisionRefundAndSettlementIsReportedToTheListenerOnce(String algorithm) {
    Policy p = policy(alg(algorithm), 3);
    assumeTrue(supports(p.algorithm()), "backend does not implement " + p.algorithm().id());
    Recording events = new Recording();
    RateLimiter l = newLimiterWithListener(p, newTicker(), events)
        .map(this::released).orElse(null);
    assumeTrue(l != null, "backend supplies no limiter with a listener (newLimiterWithListener)");
    Decision a = l.tryAcquire("heard", 3);
    Decision refused = l.tryAcquire("heard", 1);
    l.peek("heard");
    assertThat(a.allowed()).isTrue();
    assertThat(refused.allowed()).isFalse();
    assertThat(refused.reason()).isEqualTo(Reason.LIMIT_EXCEEDED);
    assertThat(events.events).containsExactly("decision heard true", "decision heard false", "refusal heard false");
    events.events.clear();
    Ticket t = a.ticket().orElseThrow();
    assertThat(l.refund(t)).isEqualTo(Refund.APPLIED);
    assertThat(l.refund(t)).isEqualTo(Refund.NO_EFFECT);
    assertThat(l.refund(null)).isEqualTo(Refund.NO_EFFECT);
    List<String> expected = new java.util.ArrayList<>(List.of("refund APPLIED", "refund NO_EFFECT"));
    if (settles()) {
      Ticket s = l.tryAcquire("heard", 2).ticket().orElseThrow();
      assertThat(l.settle(s, 1)).isEqualTo(Settlement.APPLIED);
      assertThat(l.settle(s, 1)).isEqualTo(Settlement.NO_EFFECT);
      expected.addAll(List.of("decision heard true", "settle APPLIED", "settle NO_EFFECT"));
    }
    assertThat(events.events).containsExactlyElementsOf(expected);
  }

  /** What a listener was told, in order (store calls left out: only shared stores make them). */
  private static final class Recording implements RateLimitListener {
    final List<String> events = new CopyOnWriteArrayList<>();

    @Override public void onDecision(Decision decision, String key) {
      events.add("decision " + key + " " + decision.allowed());
    }

    @Override public void onRefusal(Decision decision, String key) {
      events.add("refusal " + key + " " + decision.allowed());
    }

    @Override public void onRefund(Policy policy, Refund result) {
      events.add("refund " + result);
    }

    @Override public void onSettle(Policy policy, Settlement result) {
      events.add("settle " + result);
    }
  }
}
