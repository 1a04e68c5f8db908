package dev.sluice.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sluice.Decision;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticket;
import dev.sluice.internal.AlgorithmKind;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The conformance kit every backend runs. A backend subclasses this in its tests and supplies only
 * {@link #newLimiter(Policy, Ticker)} (and, where it can, {@link #outage}); the kit checks that the
 * backend decides exactly as the reference model does, that it admits exactly the limit under 16
 * threads, that refunds, settlements and tickets behave, that a fallback decides during an outage,
 * that bad input is refused with the exact messages, and that keys and policies are independent.
 *
 * <p>This class holds the base cases: trace replay against the model, tickets and refunds, decisions
 * at the edges, and budget identity. The other concerns stand in its sealed superclasses, one a file
 * ({@link KitFixtures} for the hooks and fixtures, {@link HotKeyCases}, {@link SettlementCases},
 * {@link OutageCases}, {@link BoundCases}, {@link PipelineCases}, {@link OverrideCases}); extending this class runs them all.
 *
 * <p>Every test builds its policies with fresh random names, so shared stores need no flushing
 * between tests or runs.
 */
public abstract non-sealed class RateLimiterContract extends OverrideCases {

  /** For a backend test class to extend. */
  protected RateLimiterContract() {}

  // ------------------------------------------------------------------------------------------
  // Trace replay against the reference model.
  // ------------------------------------------------------------------------------------------

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void replaysSeededTracesExactlyAsTheReferenceModel(String algorithm) {
    for (long seed : new long[] {1L, 0x5eedL}) {
      replay(algorithm, seed, false);
    }
  }

  /**
   * Issue 19: the same traces with settlements mixed in: a ticket settles at a random actual (0 up
   * to the limit: refunds, exact settlements, overruns into debt and against its ceiling), in its
   * window, after the window rolled, or after a reset. A quarter of {@link #traceLength()} events,
   * most of the refund share of them settlements, so the kit stays fast on the slower stores.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void replaysSeededTracesWithSettlementsExactlyAsTheReferenceModel(String algorithm) {
    assumeTrue(settles(), "backend does not settle yet");
    replay(algorithm, 0x5e771eL, true);
  }

  private void replay(String algorithm, long seed, boolean settling) {
    SplittableRandom rnd = new SplittableRandom(seed ^ algorithm.hashCode());
    Policy main = policy(alg(algorithm), 5 + rnd.nextInt(8));
    Policy other = policy(alg(algorithm), 3 + rnd.nextInt(4));
    ManualTicker ticker = newTicker();
    RateLimiter backend = limiter(main, ticker);
    ReferenceLimiter model = new ReferenceLimiter();
    String[] keys = {"alice", "bob", "carol dan", "\uD83D\uDE00 emoji", "k:" + seed};
    long w = windowMicros(main);
    List<Ticket[]> tickets = new ArrayList<>();

    int events = settling ? Math.max(1, traceLength() / 4) : traceLength();
    for (int i = 0; i < events; i++) {
      long now = ticker.nowMicros();
      String key = keys[rnd.nextInt(keys.length)];
      Policy p = rnd.nextInt(5) == 0 ? other : main;
      int op = rnd.nextInt(100);
      String where = "seed " + seed + ", event " + i + ", t=" + now + ", key '" + key + "', policy " + p;
      if (op < 70) {
        long permits = rnd.nextInt(4) == 0 ? 1 + rnd.nextInt((int) p.limit()) : 1;
        Decision got = backend.tryAcquire(key, permits, p);
        Decision want = model.acquire(p, key, permits, now);
        assertThat(got).as("acquire %d: %s", permits, where).isEqualTo(want);
        assertThat(got.ticket().isPresent()).as("ticket presence: %s", where).isEqualTo(want.ticket().isPresent());
        if (got.allowed()) {
          assertThat(got.ticket().get().permits()).isEqualTo(permits);
          tickets.add(new Ticket[] {got.ticket().get(), want.ticket().get()});
        }
      } else if (op < 82) {
        Decision got = backend.peek(key, p);
        Decision want = model.peek(p, key, now);
        assertThat(got).as("peek: %s", where).isEqualTo(want);
      } else if (op < 95) {
        if (settling && !tickets.isEmpty() && op >= 85) {
          Ticket[] t = tickets.remove(rnd.nextInt(tickets.size()));
          long limit = t[1].policy().limit();
          long actual = rnd.nextInt(3) == 0 ? limit : rnd.nextLong(limit + 1);
          Settlement got = backend.settle(t[0], actual);
          Settlement want = model.settle(t[1], actual, now);
          assertThat(got).as("settle of %s at %d: %s", t[1], actual, where).isEqualTo(want);
        } else if (!tickets.isEmpty()) {
          Ticket[] t = tickets.remove(rnd.nextInt(tickets.size()));
          Refund got = backend.refund(t[0]);
          Refund want = model.refund(t[1], now);
          assertThat(got).as("refund of %s: %s", t[1], where).isEqualTo(want);
        }
      } else if (op < 97) {
        backend.reset(key, p);
        model.reset(p, key);
      } else {
        // A jump across window boundaries: exactly onto one, one microsecond either side, or beyond.
        long boundary = w - Math.floorMod(now, w);
        long[] jumps = {boundary, boundary - 1, boundary + 1, w, 2 * w + 1, 3 * w + rnd.nextLong(w)};
        ticker.advanceMicros(jumps[rnd.nextInt(jumps.length)]);
        continue;
      }
      int g = rnd.nextInt(10);
      long gap = g < 4 ? 0 : g < 8 ? rnd.nextLong(w / 20 + 1) : rnd.nextLong(w + 1);
      ticker.advanceMicros(gap);
    }
  }

  // ------------------------------------------------------------------------------------------
  // Tickets and refunds.
  // ------------------------------------------------------------------------------------------

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void refundAfterSaturationAdmitsExactlyOneMore(String algorithm) {
    Policy p = policy(alg(algorithm), 4);
    RateLimiter l = limiter(p, newTicker());
    Ticket first = l.tryAcquire("k").ticket().orElseThrow();
    for (int i = 1; i < 4; i++) {
      assertThat(l.tryAcquire("k").allowed()).isTrue();
    }
    Decision refused = l.tryAcquire("k");
    assertThat(refused.allowed()).isFalse();
    assertThat(refused.reason()).isEqualTo(Reason.LIMIT_EXCEEDED);
    assertThat(refused.ticket()).isEmpty();
    assertThat(refused.retryAfter()).isGreaterThanOrEqualTo(Duration.ofMillis(1));

    assertThat(l.refund(first)).isEqualTo(Refund.APPLIED);
    assertThat(l.tryAcquire("k").allowed()).isTrue();
    assertThat(l.tryAcquire("k").allowed()).isFalse();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void aTicketRefundsOnce(String algorithm) {
    Policy p = policy(alg(algorithm), 4);
    RateLimiter l = limiter(p, newTicker());
    l.tryAcquire("k");
    Ticket t = l.tryAcquire("k").ticket().orElseThrow();
    assertThat(l.refund(t)).isEqualTo(Refund.APPLIED);
    assertThat(l.refund(t)).isEqualTo(Refund.NO_EFFECT);
    assertThat(l.peek("k").remaining()).isEqualTo(3);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("windowAlgorithms")
  void refundAfterTheWindowRolledDoesNothing(String algorithm) {
    Policy p = policy(alg(algorithm), 3);
    ManualTicker ticker = newTicker();
    RateLimiter l = limiter(p, ticker);
    Ticket t = l.tryAcquire("k", 3).ticket().orElseThrow();
    ticker.advanceMicros(windowMicros(p) * 3);
    Decision before = l.peek("k");
    assertThat(l.refund(t)).isEqualTo(Refund.NO_EFFECT);
    assertThat(l.peek("k")).isEqualTo(before);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void refundInTheSameWindowRestoresRemaining(String algorithm) {
    Policy p = policy(alg(algorithm), 5);
    RateLimiter l = limiter(p, newTicker());
    Decision d = l.tryAcquire("k", 2);
    assertThat(d.remaining()).isEqualTo(3);
    assertThat(l.refund(d.ticket().orElseThrow())).isEqualTo(Refund.APPLIED);
    assertThat(l.peek("k").remaining()).isEqualTo(5);
  }

  @Test
  void refundNeverThrows() {
    Policy p = policy("fixed-window", 3);
    RateLimiter l = limiter(p, newTicker());
    assertThat(l.refund(null)).isEqualTo(Refund.NO_EFFECT);
    Ticket foreign = new Ticket.Issuer().issue(policy("fixed-window", 3), "nobody", 1, 42);
    assertThat(l.refund(foreign)).isEqualTo(Refund.NO_EFFECT);
  }

  /**
   * Issue 13: a hand-built ticket refunded (APPLIED) into any limiter of its policy, a ticket of
   * instance X refunded into instance Y, and a refund on the wrong limiter burned the ticket.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void forgedAndForeignTicketsHaveNoEffectAndLeaveTheRealTicketRefundable(String algorithm) {
    Policy p = policy(alg(algorithm), 3);
    ManualTicker ticker = newTicker();
    RateLimiter l = limiter(p, ticker);
    RateLimiter otherInstance = limiter(p, ticker);
    Ticket real = l.tryAcquire("k").ticket().orElseThrow();
    Ticket forged = new Ticket.Issuer().issue(p, "k", 1, real.stamp());
    assertThat(l.refund(forged)).isEqualTo(Refund.NO_EFFECT);
    assertThat(otherInstance.refund(real)).isEqualTo(Refund.NO_EFFECT);
    assertThat(real.isSpent()).isFalse();
    assertThat(l.peek("k").remaining()).isEqualTo(2);
    assertThat(l.refund(real)).isEqualTo(Refund.APPLIED);
    assertThat(l.peek("k").remaining()).isEqualTo(3);
    assertThat(l.refund(real)).isEqualTo(Refund.NO_EFFECT);
  }

  /**
   * Issue 26, finding 5: two memory limiters built with one {@link Ticket.Issuer}, and B refunded A's
   * ticket: APPLIED when B had state for the key, giving B permits it never charged; NO_EFFECT but
   * spending the ticket when it had none, so A could no longer refund it. A ticket refunds only into
   * the budget that charged it, whoever holds the issuer: limiters that share a store share that
   * budget (B's refund is A's, once); limiters that do not (memory) leave B's budget alone and the
   * ticket refundable by A.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void sharedIssuerRefundsOnlyIntoTheBudgetThatChargedTheTicket(String algorithm) {
    Policy p = policy(alg(algorithm), 5);
    assumeTrue(supports(p.algorithm()), "backend does not implement " + p.algorithm().id());
    ManualTicker ticker = newTicker();
    Ticket.Issuer issuer = new Ticket.Issuer();
    RateLimiter a = newLimiterWithIssuer(p, ticker, issuer).map(this::released).orElse(null);
    assumeTrue(a != null, "backend takes no issuer");
    RateLimiter b = released(newLimiterWithIssuer(p, ticker, issuer).orElseThrow());
    Ticket fromA = a.tryAcquire("k", 2).ticket().orElseThrow();
    assertThat(b.tryAcquire("k", 1).allowed()).isTrue();
    boolean shared = a.peek("k").remaining() == 2; // B's acquire landed in A's budget: one store
    long aBefore = a.peek("k").remaining();
    long bBefore = b.peek("k").remaining();

    Refund byB = b.refund(fromA);
    Refund byA = a.refund(fromA);

    if (shared) {
      assertThat(byB).as("B refunds into the one budget that charged the ticket").isEqualTo(Refund.APPLIED);
      assertThat(byA).as("and only once").isEqualTo(Refund.NO_EFFECT);
      assertThat(a.peek("k").remaining()).isEqualTo(aBefore + 2);
    } else {
      assertThat(byB).as("B never charged the ticket").isEqualTo(Refund.NO_EFFECT);
      assertThat(b.peek("k").remaining()).as("B's budget is unchanged").isEqualTo(bBefore);
      assertThat(byA).as("the ticket stayed A's to refund").isEqualTo(Refund.APPLIED);
      assertThat(a.peek("k").remaining()).isEqualTo(aBefore + 2);
      assertThat(b.settle(fromA, 0)).isEqualTo(dev.sluice.Settlement.NO_EFFECT);
    }
  }

  // ------------------------------------------------------------------------------------------
  // Decisions at the edges.
  // ------------------------------------------------------------------------------------------

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void saturatedRefusalsChangeNothing(String algorithm) {
    Policy p = policy(alg(algorithm), 3);
    RateLimiter l = limiter(p, newTicker());
    l.tryAcquire("k", 3);
    Decision first = l.tryAcquire("k");
    for (int i = 0; i < 20; i++) {
      assertThat(l.tryAcquire("k")).isEqualTo(first);
    }
    assertThat(first.allowed()).isFalse();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void aRefusedRequestFitsAfterItsRetryAfter(String algorithm) {
    Policy p = policy(alg(algorithm), 6);
    ManualTicker ticker = newTicker();
    RateLimiter l = limiter(p, ticker);
    l.tryAcquire("k", 5);
    Decision refused = l.tryAcquire("k", 3);
    assertThat(refused.allowed()).isFalse();
    ticker.advanceMicros(refused.retryAfterMicros());
    assertThat(l.tryAcquire("k", 3).allowed()).isTrue();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void peekChargesNothing(String algorithm) {
    Policy p = policy(alg(algorithm), 2);
    RateLimiter l = limiter(p, newTicker());
    for (int i = 0; i < 10; i++) {
      Decision d = l.peek("k");
      assertThat(d.allowed()).isTrue();
      assertThat(d.remaining()).isEqualTo(2);
      assertThat(d.ticket()).isEmpty();
    }
    assertThat(l.tryAcquire("k", 2).allowed()).isTrue();
    Decision after = l.peek("k");
    assertThat(after.allowed()).isFalse();
    assertThat(after.remaining()).isZero();
  }

  @Test
  void decisionsCarryThePolicyAndLimit() {
    Policy p = policy("fixed-window", 7);
    RateLimiter l = limiter(p, newTicker());
    Decision d = l.tryAcquire("k");
    assertThat(d.policy()).isEqualTo(p);
    assertThat(d.limit()).isEqualTo(7);
    assertThat(d.remaining()).isEqualTo(6);
    assertThat(d.path()).isEqualTo(Path.PRIMARY);
    assertThat(d.retryAfter()).isZero();
  }

  @Test
  void resetForgetsTheKey() {
    Policy p = policy("fixed-window", 2);
    RateLimiter l = limiter(p, newTicker());
    l.tryAcquire("k", 2);
    assertThat(l.tryAcquire("k").allowed()).isFalse();
    l.reset("k");
    assertThat(l.tryAcquire("k").remaining()).isEqualTo(1);
  }

  @Test
  void asyncDecidesLikeSync() throws Exception {
    Policy p = policy("fixed-window", 2);
    RateLimiter l = limiter(p, newTicker());
    assertThat(l.tryAcquireAsync("k", 2).toCompletableFuture().get(30, TimeUnit.SECONDS).allowed()).isTrue();
    Decision d = l.tryAcquireAsync("k", 1).toCompletableFuture().get(30, TimeUnit.SECONDS);
    assertThat(d.allowed()).isFalse();
    assertThat(d.reason()).isEqualTo(Reason.LIMIT_EXCEEDED);
  }

  // ------------------------------------------------------------------------------------------
  // Independence.
  // ------------------------------------------------------------------------------------------

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void keysAreIndependent(String algorithm) {
    Policy p = policy(alg(algorithm), 2);
    RateLimiter l = limiter(p, newTicker());
    assertThat(l.tryAcquire("a", 2).allowed()).isTrue();
    assertThat(l.tryAcquire("a").allowed()).isFalse();
    assertThat(l.tryAcquire("b").allowed()).isTrue();
    // Whitespace is part of the key.
    assertThat(l.tryAcquire("a ").allowed()).isTrue();
    assertThat(l.tryAcquire(" a").allowed()).isTrue();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void policiesAreIndependentAndOverridesUseTheirOwnBudget(String algorithm) {
    Policy p = policy(alg(algorithm), 3);
    Policy tight = policy(alg(algorithm), 1);
    RateLimiter l = limiter(p, newTicker());
    assertThat(l.tryAcquire("k", 1, tight).allowed()).isTrue();
    Decision second = l.tryAcquire("k", 1, tight);
    assertThat(second.allowed()).isFalse();
    assertThat(second.policy()).isEqualTo(tight);
    assertThat(second.limit()).isEqualTo(1);
    assertThat(l.tryAcquire("k", 3).allowed()).isTrue();
    assertThat(l.peek("k", tight).allowed()).isFalse();
  }

  /**
   * Issue 13: the memory tier keyed a budget by the whole policy, so an override with the same name
   * and other numbers started afresh (50 spent under {@code api} 100, then {@code api} 10 admitted 10
   * more). A budget is the name and the key: the numbers of each call apply to the existing state at
   * its hit, lowered (refuses at once when over) or raised (admits more), exactly as the model says.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void aSameNameOverrideAppliesItsNumbersToTheExistingBudget(String algorithm) {
    Policy wide = policy(alg(algorithm), 10);
    Policy lowered = policy(wide.name(), algorithm, 4);
    Policy raised = policy(wide.name(), algorithm, 12);
    ManualTicker ticker = newTicker();
    RateLimiter l = limiter(wide, ticker);
    ReferenceLimiter model = new ReferenceLimiter();
    for (Policy p : List.of(wide, wide, wide, wide, wide, wide, lowered, lowered, raised, raised, raised, raised, raised,
        raised, raised, lowered, wide)) {
      long now = ticker.nowMicros();
      assertThat(l.peek("k", p)).as("peek under %s", p).isEqualTo(model.peek(p, "k", now));
      assertThat(l.tryAcquire("k", 1, p)).as("acquire under %s", p).isEqualTo(model.acquire(p, "k", 1, now));
      ticker.advanceMicros(1_000);
    }
    if (!AlgorithmKind.parse(algorithm).hasBurst()) {
      Policy fresh = policy(alg(algorithm), 10);
      RateLimiter m = limiter(fresh, newTicker());
      for (int i = 0; i < 6; i++) {
        assertThat(m.tryAcquire("k").allowed()).isTrue();
      }
      assertThat(m.tryAcquire("k", 1, policy(fresh.name(), algorithm, 4)).allowed()).as("lowered below what was spent").isFalse();
      for (int i = 0; i < 6; i++) {
        assertThat(m.tryAcquire("k", 1, policy(fresh.name(), algorithm, 12)).allowed()).as("raised: %d more", i + 1).isTrue();
      }
      assertThat(m.tryAcquire("k", 1, policy(fresh.name(), algorithm, 12)).allowed()).isFalse();
    }
  }

  /**
   * One rule for a policy redefined with another algorithm under the same name, on every backend:
   * the state the other algorithm wrote says nothing about this one, so it counts as absent and the
   * first write replaces it (a fresh budget, both ways).
   */
  @Test
  void aSameNameWithAnotherAlgorithmStartsAFreshBudget() {
    Policy fw = policy("fixed-window", 2);
    Policy tb = policy(fw.name(), "token-bucket", 2);
    ManualTicker ticker = newTicker();
    RateLimiter l = limiter(fw, ticker);
    assumeTrue(supports(tb.algorithm()), "backend does not implement " + tb.algorithm().id());
    ReferenceLimiter model = new ReferenceLimiter();
    for (Policy p : List.of(fw, fw, fw, tb, tb, tb, fw, fw, fw)) {
      long now = ticker.nowMicros();
      Decision want = model.acquire(p, "k", 1, now);
      assertThat(l.tryAcquire("k", 1, p)).as("under %s", p.algorithm()).isEqualTo(want);
      ticker.advanceMicros(1_000);
    }
    assertThat(l.peek("k", fw).remaining()).isZero();
    assertThat(l.peek("k", tb).remaining()).as("the fixed window's writes replaced the bucket").isEqualTo(2);
  }

  @Test
  void theSameNumbersUnderAnotherNameAreAnotherBudget() {
    Policy a = policy("fixed-window", 1);
    Policy b = a.withName(a.name() + "-b");
    RateLimiter l = limiter(a, newTicker());
    assertThat(l.tryAcquire("k").allowed()).isTrue();
    assertThat(l.tryAcquire("k").allowed()).isFalse();
    assertThat(l.tryAcquire("k", 1, b).allowed()).isTrue();
  }
}
