package dev.sluice.model;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Algorithm;
import dev.sluice.Policy;
import java.math.BigInteger;
import java.time.Duration;
import java.util.Arrays;
import java.util.Objects;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

/**
 * The reference model's own guarantees, as properties over random traces and as examples at the
 * boundaries. Every backend inherits them through the conformance kit.
 */
class ReferenceModelTest {
  private static final long T0 = 1_700_000_000_000_000L;
  private static final long W = 1_000_000;

  /** A random algorithm with small numbers and a random trace of (gap, permits) events. */
  record Trace(Algorithm alg, long[] gaps, long[] permits) {}

  @Provide
  Arbitrary<Trace> traces() {
    Arbitrary<Algorithm> algs = Arbitraries.oneOf(
        Arbitraries.longs().between(1, 12).map(l -> (Algorithm) new Algorithm.FixedWindow(l, W)),
        Arbitraries.longs().between(1, 12).map(l -> (Algorithm) new Algorithm.SlidingWindow(l, W)),
        Combinators.combine(Arbitraries.longs().between(1, 12), Arbitraries.longs().between(1, 7))
            .as((c, r) -> (Algorithm) new Algorithm.TokenBucket(c, r, W)),
        Combinators.combine(Arbitraries.longs().between(1, 9), Arbitraries.longs().between(1, 12))
            .as((r, b) -> (Algorithm) new Algorithm.Gcra(r, W, b)),
        Arbitraries.longs().between(1, 12).map(l -> (Algorithm) new Algorithm.SlidingLog(l, W)));
    return algs.flatMap(alg -> {
      Arbitrary<long[]> gaps = Arbitraries.longs().between(0, 3 * W).array(long[].class).ofSize(60)
          .map(a -> { for (int i = 0; i < a.length; i++) if (i % 3 != 0) a[i] = a[i] % (W / 5); return a; });
      Arbitrary<long[]> permits = Arbitraries.longs().between(1, alg.limit()).array(long[].class).ofSize(60);
      return Combinators.combine(gaps, permits).as((g, p) -> new Trace(alg, g, p));
    });
  }

  /** A decision on a key state, with the state copied so that probes leave the trace alone. */
  private static final class Key {
    final Algorithm alg;
    long[] st = new long[ReferenceModel.STATE_SIZE];
    SlidingLogState log = new SlidingLogState();

    Key(Algorithm alg) { this.alg = alg; }

    Outcome acquire(long now, long n) {
      Outcome o = new Outcome();
      if (alg instanceof Algorithm.SlidingLog sl) log.acquire(sl, now, n, o); else ReferenceModel.acquire(alg, st, now, n, o);
      return o;
    }

    Outcome peek(long now) {
      Outcome o = new Outcome();
      if (alg instanceof Algorithm.SlidingLog sl) log.peek(sl, now, o); else ReferenceModel.peek(alg, st, now, o);
      return o;
    }

    Outcome settle(long now, long delta, long stamp) {
      Outcome o = new Outcome();
      if (alg instanceof Algorithm.SlidingLog sl) log.settle(sl, now, delta, stamp, o); else ReferenceModel.settle(alg, st, now, delta, stamp, o);
      return o;
    }

    long expiresAt() {
      return alg instanceof Algorithm.SlidingLog sl ? log.expiresAt(sl) : ReferenceModel.expiresAt(alg, st);
    }

    /** Would {@code n} fit at {@code at}? Decided on a copy. */
    boolean fitsAt(long at, long n, Trace t, int upTo, long start) {
      Key copy = new Key(alg);
      long now = start;
      for (int i = 0; i <= upTo; i++) {
        now += t.gaps[i];
        copy.acquire(now, t.permits[i]);
      }
      return copy.acquire(at, n).allowed();
    }
  }

  @Property(tries = 300)
  void aRefusedRequestFitsExactlyAtItsRetryAfterAndNotBefore(@ForAll("traces") Trace t) {
    Key k = new Key(t.alg);
    long now = T0;
    for (int i = 0; i < t.gaps.length; i++) {
      now += t.gaps[i];
      Outcome o = k.acquire(now, t.permits[i]);
      if (!o.allowed()) {
        long at = now + o.retryAfter();
        assertThat(o.retryAfter()).isPositive();
        if (!(t.alg instanceof Algorithm.SlidingWindow) && !(t.alg instanceof Algorithm.SlidingLog)) {
          assertThat(at).as("now + retryAfter is at most resetAt").isLessThanOrEqualTo(o.resetAt());
        }
        // Replay the trace up to the refusal (which wrote nothing), then probe.
        assertThat(k.fitsAt(at, t.permits[i], t, i - 1 < 0 ? -1 : i, T0) || fitsAfterPrefix(t, i, at)).as("fits at retryAfter").isTrue();
        assertThat(fitsAfterPrefix(t, i, at - 1)).as("does not fit a microsecond earlier").isFalse();
      }
    }
  }

  private static boolean fitsAfterPrefix(Trace t, int refusedIndex, long at) {
    Key copy = new Key(t.alg);
    long now = T0;
    for (int i = 0; i < refusedIndex; i++) {
      now += t.gaps[i];
      copy.acquire(now, t.permits[i]);
    }
    return copy.acquire(at, t.permits[refusedIndex]).allowed();
  }

  @Property(tries = 300)
  void refusalsWriteNothingAndAcquiresSpendExactlyWhatPeekShows(@ForAll("traces") Trace t) {
    Key k = new Key(t.alg);
    long now = T0;
    for (int i = 0; i < t.gaps.length; i++) {
      now += t.gaps[i];
      Outcome before = k.peek(now);
      long[] st = Arrays.copyOf(k.st, k.st.length);
      Outcome o = k.acquire(now, t.permits[i]);
      assertThat(o.allowed()).isEqualTo(t.permits[i] <= before.remaining());
      if (o.allowed()) {
        assertThat(o.remaining()).isEqualTo(before.remaining() - t.permits[i]);
        assertThat(o.wrote()).isTrue();
      } else {
        assertThat(o.wrote()).isFalse();
        assertThat(k.st).isEqualTo(st);
        assertThat(o.remaining()).isEqualTo(before.remaining());
      }
      assertThat(o.remaining()).isBetween(0L, t.alg.limit());
    }
  }

  @Property(tries = 200)
  void stateAtItsExpiryDecidesLikeNoState(@ForAll("traces") Trace t) {
    if (t.alg instanceof Algorithm.SlidingLog) {
      return;
    }
    Key k = new Key(t.alg);
    long now = T0;
    for (int i = 0; i < t.gaps.length; i++) {
      now += t.gaps[i];
      k.acquire(now, t.permits[i]);
    }
    long exp = ReferenceModel.expiresAt(t.alg, k.st);
    long at = Math.max(exp, now);
    Outcome fromState = k.peek(at);
    Outcome fresh = new Key(t.alg).peek(at);
    assertThat(fromState.remaining()).isEqualTo(fresh.remaining());
    assertThat(fromState.allowed()).isEqualTo(fresh.allowed());
  }

  /**
   * The bound {@link ReferenceModel#lifetime} promises, on which Redis's refusal of a lagging supplied
   * clock rests (issue 26, finding 6): whatever acquires, refunds and overruns into debt leave, the
   * state expires no later than the latest of their readings plus the lifetime.
   */
  @Property(tries = 300)
  void aStateNeverMattersLongerThanItsLifetimeAfterTheLatestStep(@ForAll("traces") Trace t) {
    Key k = new Key(t.alg);
    long lifetime = ReferenceModel.lifetime(t.alg);
    long now = T0;
    long bound = 0;
    long stamp = 0;
    for (int i = 0; i < t.gaps.length; i++) {
      now += t.gaps[i];
      Outcome o = switch (i % 4) {
        case 2 -> k.settle(now, -t.permits[i], stamp);
        case 3 -> k.settle(now, t.permits[i], stamp); // an overrun: into debt when the limit is spent
        default -> k.acquire(now, t.permits[i]);
      };
      if (i % 4 < 2 && o.allowed()) {
        stamp = o.stamp();
      }
      bound = Math.max(bound, now + lifetime);
      assertThat(k.expiresAt()).as("%s after step %d at %d", t.alg, i, now).isLessThanOrEqualTo(bound);
    }
  }

  // ---- Examples at the edges ----------------------------------------------------------------

  /**
   * The refill, the GCRA cap test and the far-future test take no division on the common path (a
   * refusal's cost was mostly its divisions); each still equals its definition, computed here in
   * exact arithmetic over the whole range a policy and a state may take.
   */
  @Property(tries = 3000)
  void theDivisionFreeStepsEqualTheirDefinitions(@ForAll("wideBuckets") Algorithm.TokenBucket tb,
      @ForAll("wideGcras") Algorithm.Gcra g, @ForAll("clocks") long now, @ForAll("clocks") long at,
      @ForAll("fractions") double fill) {
    long full = tb.capacity() * tb.refillPeriodMicros();
    long[] bucket = {at, (long) (fill * 2 * full) - full}; // from a capacity in debt to full
    BigInteger gap = BigInteger.valueOf(full - bucket[1]);
    long elapsed = now - at;
    long expected = elapsed <= 0 ? bucket[1]
        : BigInteger.valueOf(elapsed).multiply(BigInteger.valueOf(tb.refillTokens())).compareTo(gap) >= 0 ? full
        : bucket[1] + elapsed * tb.refillTokens();
    assertThat(ReferenceModel.refill(tb, bucket, now)).isEqualTo(expected);

    long toFull = -Math.floorDiv(-(full - bucket[1]), tb.refillTokens()); // the first elapsed that fills it
    if (toFull > 1 && now - toFull > 0) {
      assertThat(ReferenceModel.refill(tb, new long[] {now - toFull, bucket[1]}, now)).isEqualTo(full);
      assertThat(ReferenceModel.refill(tb, new long[] {now - toFull + 1, bucket[1]}, now))
          .isEqualTo(bucket[1] + (toFull - 1) * tb.refillTokens()).isLessThan(full);
    }

    long[] gcra = {at, (long) (fill * (g.rate() - 1))};
    long drain = g.burst() * g.periodMicros() / g.rate(); // how far ahead a full burst puts the TAT
    assertThat(ReferenceModel.debtOverCap(g, gcra, now)).isEqualTo(at - now > drain);
    assertThat(ReferenceModel.debtOverCap(g, new long[] {now + drain, gcra[1]}, now)).isFalse();
    assertThat(ReferenceModel.debtOverCap(g, new long[] {now + drain + 1, gcra[1]}, now)).isTrue();

    for (Algorithm alg : new Algorithm[] {tb, g}) {
      long horizon = dev.sluice.internal.Checks.CLOCK_TOLERANCE_MICROS + (alg == tb
          ? tb.capacity() * tb.refillPeriodMicros() / tb.refillTokens() + 1
          : 2 * (g.burst() * g.periodMicros() / g.rate()) + 1);
      assertThat(ReferenceModel.tooFarAhead(alg, new long[] {at, 0}, now)).isEqualTo(at - now > horizon);
    }
  }

  /** Token buckets and GCRA limits across the range a policy may take (out-of-bounds draws are skipped). */
  @Provide
  Arbitrary<Algorithm.TokenBucket> wideBuckets() {
    return Combinators.combine(Arbitraries.longs().between(1, 1L << 36), Arbitraries.longs().between(1, 1L << 36),
            Arbitraries.longs().between(1_000, 1L << 40))
        .as((c, r, p) -> orNull(() -> new Algorithm.TokenBucket(c, r, p))).filter(Objects::nonNull);
  }

  @Provide
  Arbitrary<Algorithm.Gcra> wideGcras() {
    return Combinators.combine(Arbitraries.longs().between(1, 1L << 36), Arbitraries.longs().between(1_000, 1L << 34),
            Arbitraries.longs().between(1, 1L << 16))
        .as((r, p, b) -> orNull(() -> new Algorithm.Gcra(r, p, b))).filter(Objects::nonNull);
  }

  private static <T> T orNull(java.util.function.Supplier<T> make) {
    try {
      return make.get();
    } catch (IllegalArgumentException outOfBounds) {
      return null;
    }
  }

  @Provide
  Arbitrary<Long> clocks() {
    return Arbitraries.oneOf(Arbitraries.longs().between(1, dev.sluice.internal.Checks.MAX_CLOCK),
        Arbitraries.longs().between(T0 - 10 * W, T0 + 10 * W));
  }

  @Provide
  Arbitrary<Double> fractions() {
    return Arbitraries.doubles().between(0, 1);
  }

  @Test
  void fixedWindowOpensOnTheFirstHitAndAdmitsTwiceTheLimitAcrossItsBoundary() {
    Key k = new Key(new Algorithm.FixedWindow(10, W));
    long first = T0 + 123;
    assertThat(k.acquire(first, 1).stamp()).isEqualTo(first);
    Outcome o = k.acquire(first + W - 1, 9);
    assertThat(o.allowed()).isTrue();
    assertThat(o.resetAt()).isEqualTo(first + W);
    Outcome refused = k.acquire(first + W - 1, 1);
    assertThat(refused.allowed()).isFalse();
    assertThat(refused.retryAfter()).isEqualTo(1);
    // One microsecond later a new window: 10 more, 19 within 2 us.
    assertThat(k.acquire(first + W, 10).allowed()).isTrue();
  }

  @Test
  void slidingWindowWeighsThePreviousWindow() {
    Key k = new Key(new Algorithm.SlidingWindow(10, W));
    long a = T0 - Math.floorMod(T0, W); // aligned window start
    assertThat(k.acquire(a + W - 1, 10).allowed()).isTrue();
    // At the boundary the previous 10 weigh ceil(10 * (W - 0) / W) = 10: nothing fits.
    assertThat(k.acquire(a + W, 1).allowed()).isFalse();
    // A quarter in: ceil(10 * 0.75) = 8; two fit.
    assertThat(k.acquire(a + W + W / 4, 2).allowed()).isTrue();
    assertThat(k.acquire(a + W + W / 4, 1).allowed()).isFalse();
  }

  @Test
  void tokenBucketRefillsContinuouslyToCapacity() {
    Key k = new Key(new Algorithm.TokenBucket(10, 5, W));
    assertThat(k.acquire(T0, 10).remaining()).isZero();
    Outcome refused = k.acquire(T0, 1);
    assertThat(refused.retryAfter()).isEqualTo(W / 5);
    assertThat(refused.resetAt()).isEqualTo(T0 + 2 * W);
    assertThat(k.acquire(T0 + W / 5, 1).allowed()).isTrue();
    assertThat(k.peek(T0 + 100 * W).remaining()).isEqualTo(10);
  }

  @Test
  void gcraKeepsTheFractionOfAMicrosecondExactly() {
    // 3 per second: an emission interval of 333,333.33 us.
    Key k = new Key(new Algorithm.Gcra(3, W, 1));
    assertThat(k.acquire(T0, 1).allowed()).isTrue();
    Outcome refused = k.acquire(T0, 1);
    assertThat(refused.retryAfter()).isEqualTo(333_334);
    long t = T0;
    for (int i = 0; i < 300; i++) {
      t += 333_333;
      k.acquire(t, 1);
    }
    // Three hundred requests at 333,333 us each run 100 us ahead of 3/s; the fraction is not lost.
    Outcome o = k.peek(t);
    assertThat(o.allowed()).isFalse();
  }

  @Test
  void slidingLogIsExact() {
    Key k = new Key(new Algorithm.SlidingLog(3, W));
    k.acquire(T0, 1);
    k.acquire(T0 + 10, 2);
    Outcome refused = k.acquire(T0 + 20, 1);
    assertThat(refused.allowed()).isFalse();
    assertThat(refused.retryAfter()).isEqualTo(W - 20);
    assertThat(k.acquire(T0 + W, 1).allowed()).isTrue();
    assertThat(k.acquire(T0 + W, 1).allowed()).isFalse();
  }

  @Test
  void aNonPositiveClockIsInvalid() {
    Outcome o = new Key(Policy.fixedWindow("p", 1, Duration.ofSeconds(1)).algorithm()).acquire(0, 1);
    assertThat(o.invalidClock()).isTrue();
    assertThat(o.allowed()).isFalse();
  }
}
