package dev.sluice.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sluice.Decision;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.model.ReferenceModel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Settlement (issue 19), on every backend that {@link #settles()}: once per ticket under 16 threads,
 * exactly the sum of the actuals, debt and its ceiling, the window rule, and buckets in debt. The
 * trace replay with settlements is in {@link RateLimiterContract}, beside the replay it extends.
 * Part of {@link RateLimiterContract}.
 */
public abstract sealed class SettlementCases extends HotKeyCases permits OutageCases {

  SettlementCases() {}

  // ------------------------------------------------------------------------------------------
  // Settlement (issue 19): reserve an estimate, settle the actual cost.
  // ------------------------------------------------------------------------------------------

  /**
   * 16 threads reserve random estimates on one key and settle each at a random actual, within one
   * window (the clock stands still): what the key was charged equals the sum of the actuals exactly.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void sixteenThreadsSettlingRandomActualsChargeExactlyTheirSum(String algorithm) throws Exception {
    long limit = 40_000;
    Policy p = policy(alg(algorithm), limit);
    RateLimiter l = settlingLimiter(p, newTicker());
    AtomicLong actuals = new AtomicLong();
    AtomicLong reserved = new AtomicLong();
    long settled = hammer(16, 25, i -> {
      SplittableRandom rnd = new SplittableRandom(i);
      Decision d = l.tryAcquire("cost", 1 + rnd.nextLong(60));
      if (!d.allowed()) {
        // a compare-and-set store may give up on a hot key; nothing was charged then
        assertThat(d.reason()).isEqualTo(Reason.CONTENTION);
        return false;
      }
      reserved.incrementAndGet();
      long actual = rnd.nextLong(100);
      actuals.addAndGet(actual);
      Settlement s = Settlement.FAILED;
      for (int attempt = 0; attempt < 100 && s == Settlement.FAILED; attempt++) {
        s = l.settle(d.ticket().orElseThrow(), actual); // a settlement that wrote nothing can be retried
      }
      return s != Settlement.FAILED;
    });
    assertThat(settled).isEqualTo(reserved.get()).isGreaterThan(16 * 25 / 2);
    assertThat(actuals.get()).isLessThan(limit);
    assertThat(l.peek("cost").remaining()).as("charged = sum of actuals").isEqualTo(limit - actuals.get());
  }

  /** 16 threads settle (or refund) one ticket at once: exactly one of them applies, once. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void sixteenThreadsSettlingOneTicketApplyItOnce(String algorithm) throws Exception {
    Policy p = policy(alg(algorithm), 20);
    RateLimiter l = settlingLimiter(p, newTicker());
    for (int round = 0; round < 5; round++) {
      String key = "once-" + round;
      Ticket t = l.tryAcquire(key, 4).ticket().orElseThrow();
      long actual = round % 2 == 0 ? 9 : 1;
      boolean withRefund = round == 4;
      long applied = hammer(16, 1, i -> i == 0 && withRefund ? l.refund(t) == Refund.APPLIED : l.settle(t, actual) == Settlement.APPLIED);
      assertThat(applied).as("round %d", round).isEqualTo(1);
      assertThat(t.isSpent()).isTrue();
      long charged = 20 - l.peek(key).remaining();
      assertThat(charged).as("round %d", round).isIn(actual, 0L);
      if (round < 4) {
        assertThat(charged).isEqualTo(actual);
      }
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void aTicketSettlesOnceAndNotAfterItsRefund(String algorithm) {
    Policy p = policy(alg(algorithm), 10);
    RateLimiter l = settlingLimiter(p, newTicker());
    Ticket a = l.tryAcquire("k", 5).ticket().orElseThrow();
    assertThat(l.settle(a, 2)).isEqualTo(Settlement.APPLIED);
    assertThat(l.peek("k").remaining()).isEqualTo(8);
    assertThat(l.settle(a, 7)).isEqualTo(Settlement.NO_EFFECT);
    assertThat(l.refund(a)).isEqualTo(Refund.NO_EFFECT);
    Ticket b = l.tryAcquire("k", 3).ticket().orElseThrow();
    assertThat(l.refund(b)).isEqualTo(Refund.APPLIED);
    assertThat(l.settle(b, 9)).isEqualTo(Settlement.NO_EFFECT);
    Ticket c = l.tryAcquire("k", 3).ticket().orElseThrow();
    assertThat(l.settle(c, 3)).as("the actual equals the reservation").isEqualTo(Settlement.NO_EFFECT);
    assertThat(c.isSpent()).isTrue();
    assertThat(l.peek("k").remaining()).isEqualTo(5);
    assertThat(l.settle(null, 1)).isEqualTo(Settlement.NO_EFFECT);
    Ticket forged = new Ticket.Issuer().issue(p, "k", 5, c.stamp());
    assertThat(l.settle(forged, 0)).isEqualTo(Settlement.NO_EFFECT);
    RateLimiter otherInstance = limiter(p, newTicker());
    Ticket d = l.tryAcquire("k", 1).ticket().orElseThrow();
    assertThat(otherInstance.settle(d, 0)).isEqualTo(Settlement.NO_EFFECT);
    assertThat(d.isSpent()).as("a foreign settlement leaves the ticket usable where it belongs").isFalse();
    assertThat(l.settle(d, 0)).isEqualTo(Settlement.APPLIED);
    assertThat(l.peek("k").remaining()).isEqualTo(5);
  }

  @Test
  void badActualsAreRefusedWithExactMessagesAndLeaveTheTicketUnspent() {
    Policy p = policy("fixed-window", 3);
    RateLimiter l = settlingLimiter(p, newTicker());
    Ticket t = l.tryAcquire("k", 2).ticket().orElseThrow();
    assertThatThrownBy(() -> l.settle(t, -1)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("actual permits -1 is below 0; settle at the cost the work had, 0 when it cost nothing");
    assertThatThrownBy(() -> l.settle(t, 4)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("actual permits 4 exceeds 3, the most policy '" + p.name() + "' can ever grant at once; "
            + "a settlement charges at most one limit's worth, so settle at most 3 (or split the cost over more reservations)");
    assertThat(t.isSpent()).isFalse();
    assertThat(l.settle(t, 3)).isEqualTo(Settlement.APPLIED);
    assertThat(l.peek("k").remaining()).isZero();
  }

  /**
   * An overrun goes into debt: the next requests are refused until refill or the window's end pays
   * it back, exactly when the model says; debt stops at its ceiling (one more limit). Every decision
   * is checked against the reference model too.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void anOverrunIsDebtTheNextRequestsWaitOut(String algorithm) {
    Policy p = policy(alg(algorithm), 10);
    ManualTicker ticker = newTicker();
    RateLimiter l = settlingLimiter(p, ticker);
    ReferenceLimiter model = new ReferenceLimiter();
    Ticket[] t = new Ticket[2];
    t[0] = acquireBoth(l, model, p, ticker, 2)[0];
    Ticket[] second = acquireBoth(l, model, p, ticker, 4);
    assertThat(l.settle(second[0], 10)).isEqualTo(model.settle(second[1], 10, ticker.nowMicros())).isEqualTo(Settlement.APPLIED);
    Decision refused = l.tryAcquire("debt");
    assertThat(refused).isEqualTo(model.acquire(p, "debt", 1, ticker.nowMicros()));
    assertThat(refused.allowed()).as("12 charged against a limit of 10").isFalse();
    assertThat(refused.remaining()).isZero();
    long wait = refused.retryAfterMicros();
    ticker.advanceMicros(wait - 1);
    assertThat(l.peek("debt").allowed()).as("still in debt 1 us before retryAfter").isFalse();
    assertThat(l.peek("debt")).isEqualTo(model.peek(p, "debt", ticker.nowMicros()));
    ticker.advanceMicros(1);
    Decision paid = l.tryAcquire("debt");
    assertThat(paid).isEqualTo(model.acquire(p, "debt", 1, ticker.nowMicros()));
    assertThat(paid.allowed()).as("the debt is paid at retryAfter").isTrue();
    // Debt stops at one more limit: five overruns of a full limit each charge only up to it.
    String key = "ceiling";
    List<Ticket[]> many = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      many.add(acquireBoth(l, model, p, ticker, 1, key));
    }
    for (Ticket[] m : many) {
      assertThat(l.settle(m[0], 10)).isEqualTo(model.settle(m[1], 10, ticker.nowMicros()));
    }
    Decision deep = l.tryAcquire(key);
    assertThat(deep).isEqualTo(model.acquire(p, key, 1, ticker.nowMicros()));
    assertThat(deep.allowed()).isFalse();
  }

  private RateLimiter settlingLimiter(Policy p, Ticker t) {
    assumeTrue(settles(), "backend does not settle yet");
    return limiter(p, t);
  }

  private static Ticket[] acquireBoth(RateLimiter l, ReferenceLimiter model, Policy p, ManualTicker ticker, long permits) {
    return acquireBoth(l, model, p, ticker, permits, "debt");
  }

  private static Ticket[] acquireBoth(RateLimiter l, ReferenceLimiter model, Policy p, ManualTicker ticker, long permits, String key) {
    Decision got = l.tryAcquire(key, permits);
    Decision want = model.acquire(p, key, permits, ticker.nowMicros());
    assertThat(got).isEqualTo(want);
    return new Ticket[] {got.ticket().orElseThrow(), want.ticket().orElseThrow()};
  }

  /**
   * The window rule: after the window a reservation was counted in rolled, its unused part does
   * nothing, and an overrun is charged to the current window, while the ticket lives (twice the
   * window from its stamp, {@link ReferenceModel#ticketExpiresAt}); after that, nothing (issue 26:
   * no store keeps a spent record past a ticket's life, so none may apply it then).
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("windowAlgorithms")
  void afterTheWindowRolledAnUnderrunDoesNothingAndAnOverrunChargesTheCurrentWindow(String algorithm) {
    Policy p = policy(alg(algorithm), 10);
    ManualTicker ticker = newTicker();
    RateLimiter l = settlingLimiter(p, ticker);
    Ticket under = l.tryAcquire("k", 6).ticket().orElseThrow();
    Ticket over = l.tryAcquire("k", 1).ticket().orElseThrow();
    Ticket late = l.tryAcquire("k", 1).ticket().orElseThrow();
    ticker.advanceMicros(over.stamp() + windowMicros(p) * 3 / 2 - ticker.nowMicros()); // rolled, within its life
    Decision before = l.peek("k");
    assertThat(l.settle(under, 0)).isEqualTo(Settlement.NO_EFFECT);
    assertThat(l.peek("k")).isEqualTo(before);
    assertThat(l.settle(over, 5)).isEqualTo(Settlement.APPLIED);
    assertThat(l.peek("k").remaining()).as("the overrun of 4 lands in the current window").isEqualTo(before.remaining() - 4);
    ticker.advanceMicros(ReferenceModel.ticketExpiresAt(p.algorithm(), late.stamp()) - ticker.nowMicros());
    Decision expired = l.peek("k");
    assertThat(l.settle(late, 5)).as("past the ticket's life").isEqualTo(Settlement.NO_EFFECT);
    assertThat(l.peek("k")).isEqualTo(expired);
  }

  /**
   * Issue 19 (found building it): a bucket in debt keeps its update time ahead of the clock, and a
   * refund added its tokens at that later instant, where an acquire now could spend them at once: the
   * refund lent tokens the bucket did not have. A refund while in debt pays the debt back first.
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"token-bucket", "gcra"})
  void aRefundWhileABucketIsInDebtLendsNothing(String algorithm) {
    Policy p = policy(alg(algorithm), 10);
    RateLimiter l = settlingLimiter(p, newTicker());
    Ticket big = l.tryAcquire("k", 5).ticket().orElseThrow();
    Ticket small = l.tryAcquire("k", 1).ticket().orElseThrow();
    assertThat(l.settle(small, 10)).isEqualTo(Settlement.APPLIED); // 4 left, 9 more charged: 5 in debt
    assertThat(l.refund(big)).isEqualTo(Refund.APPLIED); // back to empty, not to 5
    assertThat(l.tryAcquire("k").allowed()).isFalse();
    assertThat(l.peek("k").remaining()).isZero();
  }

  /**
   * Regression: the far-future rule (a state further ahead of the clock than its policy could write
   * is corrupt) once ignored settlement debt, so a slow bucket in debt (its update time, or GCRA's
   * arrival time, days ahead) read back as {@code CORRUPT_STATE} on every backend. A day-long refill
   * in debt is debt: refused as the model refuses it, and paid back by refill.
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"token-bucket", "gcra"})
  void settlementDebtOnASlowBucketIsNotMistakenForFarFutureState(String algorithm) {
    String name = "tck-" + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffffffL) + "-slow";
    Policy p = algorithm.equals("gcra") ? Policy.gcra(name, 1, Duration.ofDays(1), 10)
        : Policy.tokenBucket(name, 10, 1, Duration.ofDays(1));
    ManualTicker ticker = newTicker();
    RateLimiter l = settlingLimiter(p, ticker);
    ReferenceLimiter model = new ReferenceLimiter();
    for (int i = 0; i < 9; i++) {
      acquireBoth(l, model, p, ticker, 1);
    }
    Ticket[] last = acquireBoth(l, model, p, ticker, 1);
    assertThat(l.settle(last[0], 10)).isEqualTo(model.settle(last[1], 10, ticker.nowMicros())).isEqualTo(Settlement.APPLIED);
    Decision inDebt = l.tryAcquire("debt");
    assertThat(inDebt.reason()).as("days of debt are debt, not corrupt state").isEqualTo(Reason.LIMIT_EXCEEDED);
    assertThat(inDebt).isEqualTo(model.acquire(p, "debt", 1, ticker.nowMicros()));
    ticker.advanceMicros(inDebt.retryAfterMicros());
    Decision paid = l.tryAcquire("debt");
    assertThat(paid).isEqualTo(model.acquire(p, "debt", 1, ticker.nowMicros()));
    assertThat(paid.allowed()).as("the debt is paid at retryAfter").isTrue();
  }

  /**
   * Buckets have no windows: a settlement at any time in the ticket's life (twice a full refill
   * from the acquire, {@link ReferenceModel#ticketExpiresAt}) still gives back (up to capacity) or
   * charges; after it, nothing.
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"token-bucket", "gcra"})
  void aBucketSettlesWhateverTimePassedWithinTheTicketsLife(String algorithm) {
    Policy p = policy(alg(algorithm), 10);
    ManualTicker ticker = newTicker();
    RateLimiter l = settlingLimiter(p, ticker);
    Ticket t = l.tryAcquire("k", 8).ticket().orElseThrow();
    ticker.advanceMicros(windowMicros(p) / 10);
    Decision before = l.peek("k");
    assertThat(l.settle(t, 2)).isEqualTo(Settlement.APPLIED);
    assertThat(l.peek("k").remaining()).isEqualTo(Math.min(10, before.remaining() + 6));
    Ticket u = l.tryAcquire("k", 1).ticket().orElseThrow();
    Ticket late = l.tryAcquire("k", 1).ticket().orElseThrow();
    long ends = ReferenceModel.ticketExpiresAt(p.algorithm(), u.stamp());
    ticker.advanceMicros(ends - 1 - ticker.nowMicros());
    assertThat(l.settle(u, 10)).isEqualTo(Settlement.APPLIED);
    assertThat(l.peek("k").remaining()).as("a full bucket charged 9 more").isEqualTo(1);
    ticker.advanceMicros(1);
    assertThat(l.settle(late, 10)).as("past the ticket's life").isEqualTo(Settlement.NO_EFFECT);
    assertThat(l.peek("k").remaining()).isEqualTo(1);
  }
}
