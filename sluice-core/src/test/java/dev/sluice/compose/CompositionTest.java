package dev.sluice.compose;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.RateLimiters;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.memory.MemoryRateLimiter;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

class CompositionTest {
  static final long T0 = 1_700_000_000_000_000L;

  final ManualTicker ticker = ManualTicker.at(T0);

  @Test
  void allowedOnlyWhenEveryLegAllowsAndARefusalChargesNoLeg() {
    var burst = new Legs.Clocked(Legs.memory(Policy.fixedWindow("burst", 2, Duration.ofSeconds(1)), ticker));
    var hourly = new Legs.Clocked(Legs.memory(Policy.fixedWindow("hourly", 5, Duration.ofHours(1)), ticker));
    Composition both = RateLimiters.all(burst, hourly);

    assertThat(both.tryAcquire("u").allowed()).isTrue();
    assertThat(both.tryAcquire("u").allowed()).isTrue();
    Decision third = both.tryAcquire("u");

    assertThat(third.allowed()).isFalse();
    assertThat(third.reason()).isEqualTo(Reason.LIMIT_EXCEEDED);
    assertThat(third.policy().name()).isEqualTo("burst");
    assertThat(third.retryAfter()).isEqualTo(Duration.ofSeconds(1));
    // The refused call charged nothing: the hourly leg counted exactly the two admitted calls.
    assertThat(hourly.netCharged()).isEqualTo(2);
    assertThat(hourly.peek("u").remaining()).isEqualTo(3);
    assertThat(hourly.acquires()).as("the refusal was found by the pre-flight, the hourly leg was never charged").isEqualTo(2);
  }

  @Test
  void allowedDecisionReportsTheMostRestrictiveLegAndRefusalTheLongestRetry() {
    var a = Legs.memory(Policy.fixedWindow("a", 10, Duration.ofSeconds(10)), ticker);
    var b = Legs.memory(Policy.fixedWindow("b", 3, Duration.ofSeconds(60)), ticker);
    var c = Legs.memory(Policy.fixedWindow("c", 3, Duration.ofSeconds(5)), ticker);
    Composition all = RateLimiters.all(a, b, c);

    Decision d = all.tryAcquire("k");
    assertThat(d.allowed()).isTrue();
    // b and c both have 2 left; b resets later, so b is the more restrictive.
    assertThat(d.remaining()).isEqualTo(2);
    assertThat(d.policy().name()).isEqualTo("b");
    assertThat(d.limit()).isEqualTo(3);
    assertThat(d.resetAtMicros()).isEqualTo(T0 + 60_000_000L);
    assertThat(d.path()).isEqualTo(Path.PRIMARY);

    all.tryAcquire("k");
    all.tryAcquire("k");
    Decision refused = all.tryAcquire("k");
    // Both b (60 s) and c (5 s) refuse; the composed refusal asks for the longer wait.
    assertThat(refused.allowed()).isFalse();
    assertThat(refused.policy().name()).isEqualTo("b");
    assertThat(refused.retryAfterMicros()).isEqualTo(60_000_000L);
    assertThat(a.peek("k").remaining()).isEqualTo(7);
  }

  @Test
  void readsTheClockOnceAndThreadsThatInstantIntoEveryLeg() {
    var counting = new Legs.CountingTicker(ticker);
    var l1 = new Legs.Clocked(MemoryRateLimiter.builder(Policy.fixedWindow("l1", 5, Duration.ofSeconds(1))).ticker(counting).build());
    var l2 = new Legs.Clocked(MemoryRateLimiter.builder(Policy.tokenBucket("l2", 5, 1, Duration.ofSeconds(1))).ticker(counting).build());
    var l3 = new Legs.Clocked(MemoryRateLimiter.builder(Policy.gcra("l3", 5, Duration.ofSeconds(1), 5)).ticker(counting).build());
    Composition all = RateLimiters.all(l1, l2, l3);
    assertThat(all.ticker()).isSameAs(counting);

    ticker.advanceMicros(123);
    long before = counting.reads.get();
    Decision d = all.tryAcquire("k", 2);

    assertThat(d.allowed()).isTrue();
    assertThat(counting.reads.get() - before).as("clock readings per composed decision").isEqualTo(1);
    for (var leg : List.of(l1, l2, l3)) {
      assertThat(leg.lastInstant).isEqualTo(T0 + 123);
      assertThat(leg.ownClock.get()).isZero();
    }
    before = counting.reads.get();
    assertThat(all.refund(d.ticket().orElseThrow())).isEqualTo(Refund.APPLIED);
    assertThat(counting.reads.get() - before).as("clock readings per composed refund").isEqualTo(1);
  }

  @Test
  void legsOnAnotherTickerAreRefusedAtBuildTime() {
    var a = Legs.memory(Policy.fixedWindow("a", 5, Duration.ofSeconds(1)), ticker);
    var b = Legs.memory(Policy.fixedWindow("b", 5, Duration.ofSeconds(1)), ManualTicker.at(T0));
    assertThatThrownBy(() -> RateLimiters.all(a, b))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("leg 1 (policy 'b') reads another ticker than the composition");
  }

  @Test
  void aComposedTicketRefundsEveryLegOnce() {
    var a = new Legs.Clocked(Legs.memory(Policy.fixedWindow("a", 5, Duration.ofSeconds(10)), ticker));
    var b = new Legs.Plain(Legs.memory(Policy.slidingWindow("b", 5, Duration.ofSeconds(10)), ticker));
    Composition all = RateLimiters.all(a, b);
    Decision d = all.tryAcquire("k", 3);
    assertThat(a.netCharged()).isEqualTo(3);
    assertThat(b.netCharged()).isEqualTo(3);

    Ticket t = d.ticket().orElseThrow();
    assertThat(all.refund(t)).isEqualTo(Refund.APPLIED);
    assertThat(all.refund(t)).isEqualTo(Refund.NO_EFFECT);
    assertThat(a.netCharged()).isZero();
    assertThat(b.netCharged()).isZero();
    assertThat(all.available("k")).isEqualTo(5);
    // A ticket some other limiter issued is not ours to refund.
    Ticket foreign = a.tryAcquire("k").ticket().orElseThrow();
    assertThat(all.refund(foreign)).isEqualTo(Refund.NO_EFFECT);
    assertThat(all.refund(null)).isEqualTo(Refund.NO_EFFECT);
  }

  /** Issue 19: settling a composed ticket settles every leg and the shared state, each once, at one instant. */
  @Test
  void aComposedTicketSettlesEveryLegAndTheSharedStateOnce() {
    MemoryRateLimiter a = Legs.memory(Policy.fixedWindow("a", 100, Duration.ofSeconds(10)), ticker);
    MemoryRateLimiter b = Legs.memory(Policy.tokenBucket("b", 100, 1, Duration.ofHours(1)), ticker);
    MemoryRateLimiter shared = Legs.memory(Policy.gcra("s", 1, Duration.ofHours(1), 100), ticker);
    var clocked = new Legs.Clocked(a);
    Composition all = Composition.builder().sharedState(SharedState.of(shared)).leg(clocked).leg(new Legs.Plain(b)).build();
    Ticket t = all.tryAcquire("k", 40).ticket().orElseThrow();
    ticker.advanceMicros(7);
    assertThat(all.settle(t, 10)).isEqualTo(Settlement.APPLIED);
    assertThat(clocked.lastInstant).as("the composition's one reading").isEqualTo(T0 + 7);
    assertThat(a.peek("k").remaining()).isEqualTo(90);
    assertThat(b.peek("k").remaining()).isEqualTo(90);
    assertThat(shared.peek("k").remaining()).isEqualTo(90);
    assertThat(all.settle(t, 50)).isEqualTo(Settlement.NO_EFFECT);
    assertThat(all.refund(t)).isEqualTo(Refund.NO_EFFECT);

    Ticket u = all.tryAcquire("k", 10).ticket().orElseThrow();
    assertThatThrownBy(() -> all.settle(u, -1)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("actual permits -1 is below 0; settle at the cost the work had, 0 when it cost nothing");
    assertThat(u.isSpent()).isFalse();
    assertThat(all.settle(u, 100)).as("an overrun of 90 on each part").isEqualTo(Settlement.APPLIED);
    for (RateLimiter part : List.of(a, b, shared)) {
      assertThat(part.peek("k").remaining()).as(part.policy().name()).isZero();
    }
    assertThat(all.tryAcquire("k").allowed()).as("every part is 10 in debt").isFalse();
    Ticket foreign = a.tryAcquire("other").ticket().orElseThrow();
    assertThat(all.settle(foreign, 0)).isEqualTo(Settlement.NO_EFFECT);
    assertThat(all.settle(null, 0)).isEqualTo(Settlement.NO_EFFECT);
  }

  @Test
  void aLegRefusingAfterOthersWereChargedGetsThemRefunded() {
    // Neither leg is clocked, so there is no pre-flight: the first is charged, the second refuses,
    // and the first must be refunded (compensated).
    var loose = new Legs.Plain(Legs.memory(Policy.fixedWindow("loose", 100, Duration.ofMinutes(1)), ticker));
    var tight = new Legs.Plain(Legs.memory(Policy.fixedWindow("tight", 1, Duration.ofMinutes(1)), ticker));
    Composition all = RateLimiters.all(loose, tight);

    assertThat(all.tryAcquire("k").allowed()).isTrue();
    for (int i = 0; i < 10; i++) {
      assertThat(all.tryAcquire("k").allowed()).isFalse();
    }
    assertThat(loose.acquires()).isEqualTo(11);
    assertThat(loose.netCharged()).isEqualTo(1);
    assertThat(loose.peek("k").remaining()).isEqualTo(99);
    CompositionStats s = all.stats();
    assertThat(s.compensations()).isEqualTo(10);
    assertThat(s.failedCompensations()).isZero();
    assertThat(s.decisions()).isEqualTo(11);
    assertThat(s.refusals()).isEqualTo(10);
    assertThat(s.rejectionRate()).isEqualTo(10.0 / 11);
  }

  @Test
  void aLegThatThrowsIsCountedAndTheCallIsRefusedWithNothingCharged() {
    var a = new Legs.Clocked(Legs.memory(Policy.fixedWindow("a", 5, Duration.ofSeconds(10)), ticker));
    var p = new Legs.Plain(Legs.memory(Policy.fixedWindow("p", 5, Duration.ofSeconds(10)), ticker));
    var broken = new Legs.Throwing(Policy.fixedWindow("broken", 5, Duration.ofSeconds(10)), new IllegalStateException("clock exploded"));
    Composition all = RateLimiters.all(a, p, broken);

    Decision d = all.tryAcquire("k");

    assertThat(d.allowed()).isFalse();
    assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
    assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
    assertThat(d.policy().name()).isEqualTo("broken");
    assertThat(d.retryAfter()).isEqualTo(Duration.ofSeconds(1));
    assertThat(d.ticket()).isEmpty();
    assertThat(a.netCharged()).isZero();
    assertThat(p.netCharged()).as("the plain leg was charged before the broken one and refunded").isZero();
    assertThat(all.stats().legErrors()).isEqualTo(1);
    assertThat(all.stats().refusals()).isEqualTo(1);
    // reset() clears the count: resetting the legs is what would fix the fault.
    all.reset();
    assertThat(all.stats().legErrors()).isZero();
  }

  /**
   * Issue 14.7: a leg that threw an Error (or a checked exception thrown sneakily) escaped the
   * composition, left the legs charged before it charged, and was not counted in legErrors. Whatever
   * a leg throws, the charged legs are refunded and it is counted; an Error propagates, any other
   * throwable is a refusal like a RuntimeException.
   */
  @Test
  void aLegThatThrowsAnErrorEscapedUncompensatedAndUncounted() {
    var p = new Legs.Plain(Legs.memory(Policy.fixedWindow("p", 5, Duration.ofSeconds(10)), ticker));
    var error = new Legs.Throwing(Policy.fixedWindow("error", 5, Duration.ofSeconds(10)), new StackOverflowError("deep"));
    Composition withError = RateLimiters.all(p, error);
    assertThatThrownBy(() -> withError.tryAcquire("k")).isInstanceOf(StackOverflowError.class).hasMessage("deep");
    assertThat(p.netCharged()).as("the plain leg, charged first, was refunded").isZero();
    assertThat(withError.stats().legErrors()).isEqualTo(1);
    assertThatThrownBy(() -> withError.peek("k")).isInstanceOf(StackOverflowError.class);
    assertThat(withError.stats().legErrors()).isEqualTo(2);

    var q = new Legs.Plain(Legs.memory(Policy.fixedWindow("q", 5, Duration.ofSeconds(10)), ticker));
    var checked = new Legs.Throwing(Policy.fixedWindow("checked", 5, Duration.ofSeconds(10)), new java.io.IOException("socket"));
    Composition withChecked = RateLimiters.all(q, checked);
    Decision d = withChecked.tryAcquire("k");
    assertThat(d.allowed()).isFalse();
    assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
    assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
    assertThat(q.netCharged()).isZero();
    assertThat(withChecked.stats().legErrors()).isEqualTo(1);
    assertThat(withChecked.peek("k").reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
    assertThat(withChecked.stats().legErrors()).isEqualTo(2);
  }

  /** Issue 13: a composition refused every failure with a fixed 1 s, whatever was configured; it waits its failure mode's retryAfter. */
  @Test
  void aFailureRefusalWaitsTheFailureModesRetryAfter() {
    var a = new Legs.Clocked(Legs.memory(Policy.fixedWindow("a", 5, Duration.ofSeconds(10)), ticker));
    var broken = new Legs.Throwing(Policy.fixedWindow("broken", 5, Duration.ofSeconds(10)), new IllegalStateException("down"));
    Composition all = Composition.builder().legs(a, broken).failureMode(FailureMode.closed(Duration.ofMillis(250))).build();
    assertThat(all.tryAcquire("k").retryAfter()).isEqualTo(Duration.ofMillis(250));
    Composition byDefault = Composition.builder().legs(a, broken).build();
    assertThat(byDefault.tryAcquire("k").retryAfter()).as("the default mode's wait").isEqualTo(Duration.ofSeconds(1));
    assertThatThrownBy(() -> Composition.builder().failureMode(null)).hasMessage("failureMode is null");
  }

  @Test
  void anIllegalArgumentFromALegIsRethrownAfterRefundingTheChargedLegs() {
    var p = new Legs.Plain(Legs.memory(Policy.fixedWindow("p", 5, Duration.ofSeconds(10)), ticker));
    var shortKeys = MemoryRateLimiter.builder(Policy.fixedWindow("s", 5, Duration.ofSeconds(10))).ticker(ticker).maxKeyLength(4).build();
    Composition all = RateLimiters.all(p, shortKeys);

    assertThatThrownBy(() -> all.tryAcquire("longer-than-four"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxKeyLength");
    assertThat(p.netCharged()).isZero();
    assertThat(all.stats().legErrors()).isZero();
  }

  @Test
  void badInputThrowsTheCoreMessages() {
    Composition all = RateLimiters.all(Legs.memory(Policy.fixedWindow("a", 5, Duration.ofSeconds(1)), ticker),
        Legs.memory(Policy.fixedWindow("b", 3, Duration.ofSeconds(1)), ticker));
    assertThatThrownBy(() -> all.tryAcquire(null)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("key is null; a key must be a non-blank string");
    assertThatThrownBy(() -> all.tryAcquire(" ")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("is blank");
    assertThatThrownBy(() -> all.tryAcquire("k", 0)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("permits 0 is below 1; ask for at least one permit");
    assertThatThrownBy(() -> all.tryAcquire("k", 4)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("permits 4 exceeds 3, the most policy 'b' can ever grant at once; such a request could never be allowed");
    assertThatThrownBy(() -> all.tryAcquire("k", 1, Policy.fixedWindow("other", 1, Duration.ofSeconds(1))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("policy 'other' is not this composition's policy 'a'");
    assertThat(all.tryAcquire("k", 1, all.policy()).allowed()).isTrue();
    assertThatThrownBy(() -> Composition.builder().build()).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("at least one leg");
    assertThatThrownBy(() -> RateLimiters.all((RateLimiter) null)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("leg is null");
  }

  @Test
  void statsAvailabilityIsAbsentWithoutAStatsKeyAndPresentWithOne() {
    var a = Legs.memory(Policy.fixedWindow("a", 5, Duration.ofSeconds(1)), ticker);
    Composition plain = RateLimiters.all(a);
    assertThat(plain.stats().available()).isEmpty();
    assertThat(plain.stats().keyed()).isFalse();
    assertThat(plain.stats().legs()).isEqualTo(1);
    assertThat(plain.stats().rejectionRate()).isZero();

    Composition global = Composition.builder().leg(a).statsKey("*").build();
    global.tryAcquire("*", 2);
    assertThat(global.stats().available()).hasValue(3);
  }

  /**
   * The headline guarantee, under contention: 16 threads, three legs (two that cannot be
   * pre-flighted, so refusals are compensated by refunds, and one clocked), a few hot keys and
   * random permit counts. At the end every leg has been charged exactly the permits of the admitted
   * calls: sum of charges = admitted x legs, to the permit.
   */
  @Test
  void threeLegsUnderSixteenThreadsNoLegIsChargedForARefusedCall() throws Exception {
    var loose = new Legs.Plain(Legs.memory(Policy.fixedWindow("loose", 400, Duration.ofMinutes(1)), ticker));
    var tight = new Legs.Plain(Legs.memory(Policy.slidingWindow("tight", 150, Duration.ofMinutes(1)), ticker));
    var bucket = new Legs.Clocked(Legs.memory(Policy.tokenBucket("bucket", 200, 1, Duration.ofMinutes(1)), ticker));
    List<Legs.Counting> legs = List.of(loose, tight, bucket);
    Composition all = RateLimiters.all(loose, tight, bucket);
    String[] keys = {"k0", "k1", "k2"};
    int threads = 16;
    int callsPerThread = 400;

    AtomicLong admittedPermits = new AtomicLong();
    AtomicLong admittedCalls = new AtomicLong();
    List<Ticket> toRefund = java.util.Collections.synchronizedList(new ArrayList<>());
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    CountDownLatch start = new CountDownLatch(1);
    List<Future<?>> fs = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      int seed = t;
      fs.add(pool.submit(() -> {
        SplittableRandom r = new SplittableRandom(seed);
        start.await();
        for (int i = 0; i < callsPerThread; i++) {
          long n = 1 + r.nextInt(3);
          Decision d = all.tryAcquire(keys[r.nextInt(keys.length)], n);
          if (d.allowed()) {
            admittedCalls.incrementAndGet();
            if (r.nextInt(10) == 0) {
              toRefund.add(d.ticket().orElseThrow()); // a few are refunded at the end, through the composition
            } else {
              admittedPermits.addAndGet(n);
            }
          }
        }
        return null;
      }));
    }
    start.countDown();
    for (Future<?> f : fs) {
      f.get(60, TimeUnit.SECONDS);
    }
    pool.shutdown();
    for (Ticket t : toRefund) {
      assertThat(all.refund(t)).isEqualTo(Refund.APPLIED);
    }

    long sumOfCharges = legs.stream().mapToLong(Legs.Counting::netCharged).sum();
    assertThat(sumOfCharges).isEqualTo(admittedPermits.get() * legs.size());
    for (var leg : legs) {
      assertThat(leg.netCharged()).isEqualTo(admittedPermits.get());
      // And the legs' own state says the same: what is used on each key adds up to the admitted permits.
      long used = 0;
      for (String k : keys) {
        used += leg.policy().limit() - leg.peek(k, leg.policy()).remaining();
      }
      assertThat(used).as("permits used on leg %s", leg.policy().name()).isEqualTo(admittedPermits.get());
    }
    CompositionStats s = all.stats();
    assertThat(s.decisions()).isEqualTo((long) threads * callsPerThread);
    assertThat(s.refusals()).isEqualTo(s.decisions() - admittedCalls.get());
    assertThat(s.refusals()).as("the test must saturate the tight leg").isPositive();
    assertThat(s.compensations()).as("refusals on the tight plain leg are compensated on the loose one").isPositive();
    assertThat(s.failedCompensations()).isZero();
    assertThat(s.legErrors()).isZero();
    // The tight leg's limit bounds what was admitted on every key.
    assertThat(admittedPermits.get()).isLessThanOrEqualTo(3 * 150);
  }

  @Test
  void nestedCompositionsShareTheOneInstant() {
    var counting = new Legs.CountingTicker(ticker);
    var a = new Legs.Clocked(MemoryRateLimiter.builder(Policy.fixedWindow("a", 5, Duration.ofSeconds(1))).ticker(counting).build());
    var b = new Legs.Clocked(MemoryRateLimiter.builder(Policy.fixedWindow("b", 5, Duration.ofSeconds(1))).ticker(counting).build());
    var c = new Legs.Clocked(MemoryRateLimiter.builder(Policy.fixedWindow("c", 1, Duration.ofSeconds(1))).ticker(counting).build());
    Composition inner = RateLimiters.all(a, b);
    Composition outer = RateLimiters.all(inner, c);
    long before = counting.reads.get();
    assertThat(outer.tryAcquire("k").allowed()).isTrue();
    assertThat(counting.reads.get() - before).isEqualTo(1);
    Decision refused = outer.tryAcquire("k");
    assertThat(refused.allowed()).isFalse();
    assertThat(refused.policy().name()).isEqualTo("c");
    assertThat(a.netCharged() + b.netCharged() + c.netCharged()).isEqualTo(3);
  }

  /**
   * Issue 26, finding 8: a composition kept what dropped tickets had charged. After 1 to 4 million
   * composed decisions whose tickets were dropped, 76 to 154 MiB stayed live after full GCs (285 k
   * {@code WeakHashMap} entries, 570 k leg tickets): a dropped ticket's entry went only when its
   * stripe of the book was next written, so whatever was decided last stayed. Now the leg tickets of
   * a dropped composed ticket become unreachable once a GC has cleared it, without another decision,
   * and the tickets kept stay refundable.
   */
  @Test
  void aCompositionKeptTheLegTicketsOfDroppedTickets() {
    List<WeakReference<Ticket>> legTickets = new ArrayList<>();
    var recorded = new ForwardingClocked(Legs.memory(Policy.fixedWindow("a", 1_000, Duration.ofMinutes(1)), ticker)) {
      @Override public Decision tryAcquireAt(String key, long permits, Policy p, long now) {
        Decision d = super.tryAcquireAt(key, permits, p, now);
        legTickets.add(new WeakReference<>(d.ticket().orElseThrow()));
        return d;
      }
    };
    Composition both = RateLimiters.all(recorded, Legs.memory(Policy.fixedWindow("b", 1_000, Duration.ofMinutes(1)), ticker));
    List<Ticket> kept = new ArrayList<>();
    int decisions = 10_000;
    for (int i = 0; i < decisions; i++) {
      Ticket composed = both.tryAcquire("k" + i % 100).ticket().orElseThrow();
      if (i % 100 == 0) {
        kept.add(composed);
      }
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    long live;
    do {
      System.gc();
      live = legTickets.stream().filter(r -> r.get() != null).count();
      if (live == kept.size()) {
        break;
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10)); // the weak references clear and the book drops their entries
    } while (System.nanoTime() < deadline);
    assertThat(live).as("leg tickets still reachable after %d composed decisions, %d tickets kept", decisions, kept.size())
        .isEqualTo(kept.size());
    assertThat(both.bookedTickets()).isEqualTo(kept.size());
    for (Ticket k : kept) {
      assertThat(both.refund(k)).isEqualTo(Refund.APPLIED);
    }
    assertThat(both.bookedTickets()).isZero();
  }

  @Test
  void theListenerHearsEveryComposedDecisionAndKeysOnlyWhenOptedIn() {
    List<String> seen = java.util.Collections.synchronizedList(new ArrayList<>());
    List<Refund> refunds = new ArrayList<>();
    dev.sluice.RateLimitListener l = new dev.sluice.RateLimitListener() {
      @Override public void onDecision(Decision d, String key) {
        seen.add((d.allowed() ? "allowed:" : "refused:") + key);
      }

      @Override public void onRefund(Policy p, Refund r) {
        refunds.add(r);
      }
    };
    var leg = Legs.memory(Policy.fixedWindow("a", 1, Duration.ofSeconds(1)), ticker);
    Composition quiet = Composition.builder().leg(leg).listener(l, false).build();
    Decision d = quiet.tryAcquire("ip-1");
    quiet.tryAcquire("ip-1");
    quiet.refund(d.ticket().orElseThrow());
    assertThat(seen).containsExactly("allowed:null", "refused:null");
    assertThat(refunds).containsExactly(Refund.APPLIED);
    seen.clear();
    Composition open = Composition.builder().leg(leg).listener(l, true).build();
    open.tryAcquire("ip-2");
    assertThat(seen).containsExactly("allowed:ip-2");
  }
}
