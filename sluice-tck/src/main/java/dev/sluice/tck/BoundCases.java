package dev.sluice.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Algorithm;
import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.internal.AlgorithmKind;
import dev.sluice.internal.Checks;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import java.util.SplittableRandom;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The edges of every bound, on every backend: the largest numbers each bound accepts and clocks that
 * step back decide as the model (issue 14, finding 3), state from the far future is corrupt
 * (finding 11), caller strings never become a store failure (finding 10), and bad input is refused
 * with the exact messages of {@code Checks}. Part of {@link RateLimiterContract}.
 */
public abstract sealed class BoundCases extends OutageCases permits PipelineCases {

  BoundCases() {}

  // ------------------------------------------------------------------------------------------
  // Issue 14, finding 3 ("overflow is a silent allow"): the largest numbers every bound accepts, and
  // clocks that step back, decide exactly as the model on every backend, and a step back never admits
  // what the latest reading refuses.
  // ------------------------------------------------------------------------------------------

  /** Policies at the edges of every bound of the core ({@code Checks}), per algorithm. */
  static List<Policy> extremePolicies(String algorithm) {
    long max = 1L << 52, maxWindow = 1L << 48, ms = 1_000;
    String n = "tck-" + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffffffL) + "-x";
    List<Algorithm> as = switch (AlgorithmKind.parse(algorithm)) { // exhaustive: a new algorithm needs its edges here
      case FIXED_WINDOW -> List.of(new Algorithm.FixedWindow(max, maxWindow), new Algorithm.FixedWindow(max, ms),
          new Algorithm.FixedWindow(1, maxWindow));
      case SLIDING_WINDOW -> List.of(new Algorithm.SlidingWindow(max / maxWindow, maxWindow),
          new Algorithm.SlidingWindow(max / ms, ms), new Algorithm.SlidingWindow(3, 7 * ms));
      case TOKEN_BUCKET -> List.of(new Algorithm.TokenBucket(max / ms, max, ms), new Algorithm.TokenBucket(16, 9, maxWindow),
          new Algorithm.TokenBucket(max / ms, 9, ms));
      case GCRA -> List.of(new Algorithm.Gcra(max - ms, ms, 1), new Algorithm.Gcra(max - 1_000_000, 1_000_000, 1),
          new Algorithm.Gcra(5, maxWindow, 8), new Algorithm.Gcra(1_000_000_000_000L, 1_000_000, 1_000));
      case SLIDING_LOG -> List.of(new Algorithm.SlidingLog(max, ms), new Algorithm.SlidingLog(3, maxWindow));
    };
    List<Policy> ps = new ArrayList<>();
    for (int i = 0; i < as.size(); i++) {
      ps.add(new Policy(n + i + "-" + algorithm, as.get(i)));
    }
    return ps;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void overflowIsNotASilentAllowAtTheEdgesOfEveryBound(String algorithm) {
    for (int s = 0; s < 3; s++) {
      for (Policy p : extremePolicies(algorithm)) { // fresh names: a shared store's budgets never meet
        long start = s == 0 ? newTicker().nowMicros() : s == 1 ? Checks.MAX_CLOCK - 3 * windowMicros(p) : 1;
        edgeTrace(p, start, 0xb0 ^ start);
      }
    }
  }

  private void edgeTrace(Policy p, long start, long seed) {
    SplittableRandom rnd = new SplittableRandom(seed ^ p.algorithm().hashCode());
    ManualTicker ticker = ManualTicker.at(start);
    RateLimiter backend = limiter(p, ticker);
    ReferenceLimiter model = new ReferenceLimiter();
    long w = windowMicros(p);
    long limit = p.limit();
    String[] keys = {"edge-a", "edge-b"};
    for (int i = 0; i < 120; i++) {
      long now = ticker.nowMicros();
      String key = keys[rnd.nextInt(keys.length)];
      long[] sizes = {1, limit, Math.max(1, limit / 2), Math.max(1, limit - 1), 1 + rnd.nextLong(limit)};
      long permits = sizes[rnd.nextInt(sizes.length)];
      String where = "policy " + p + ", start " + start + ", event " + i + ", t=" + now + ", key " + key;
      if (rnd.nextInt(5) == 0) {
        assertThat(backend.peek(key, p)).as("peek: %s", where).isEqualTo(model.peek(p, key, now));
      } else {
        Decision got = backend.tryAcquire(key, permits, p);
        Decision want = model.acquire(p, key, permits, now);
        assertThat(got).as("acquire %d: %s", permits, where).isEqualTo(want);
        if (got.allowed() && rnd.nextInt(4) == 0) {
          assertThat(backend.refund(got.ticket().get())).as("refund: %s", where).isEqualTo(model.refund(want.ticket().get(), now));
        }
      }
      long[] steps = {0, 1, w - Math.floorMod(now, w), w / 3 + 1, w, 2 * w + 1};
      long step = steps[rnd.nextInt(steps.length)];
      if (now + step <= Checks.MAX_CLOCK) {
        ticker.advanceMicros(step);
      }
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void aClockSteppedBackNeverAdmitsWhatTheLatestReadingRefuses(String algorithm) {
    List<Policy> ps = new ArrayList<>(extremePolicies(algorithm));
    ps.add(policy(alg(algorithm), 5));
    for (Policy p : ps) {
      SplittableRandom rnd = new SplittableRandom(p.algorithm().hashCode());
      ManualTicker ticker = newTicker();
      RateLimiter backend = limiter(p, ticker);
      long latest = ticker.nowMicros();
      // all within Checks.CLOCK_TOLERANCE_MICROS (further back, a state is refused as CORRUPT_STATE)
      long[] backs = {1, 1_000, Math.min(windowMicros(p) / 2, 1_800_000_000L), 1_000_000, 10_000_000, 1_800_000_000L};
      for (int round = 0; round < 12; round++) {
        // saturate the key at the latest reading, then step back and ask again
        for (int i = 0; i < 4 && backend.tryAcquire("back", p.limit(), p).allowed(); i++) {
          // spend
        }
        Decision atLatest = backend.peek("back", p);
        long back = Math.min(latest - 1, backs[rnd.nextInt(backs.length)]);
        ticker.set(latest - back);
        Decision behind = backend.tryAcquire("back", 1, p);
        String where = "policy " + p + ", latest " + latest + ", stepped back " + back + " us";
        assertThat(behind.reason()).as("%s: %s", behind, where)
            .isIn(Reason.WITHIN_LIMIT, Reason.LIMIT_EXCEEDED, Reason.INVALID_CLOCK);
        if (!atLatest.allowed()) {
          assertThat(behind.allowed()).as("refused at the latest reading (%s) but allowed %s us before it: %s", atLatest, back, where)
              .isFalse();
        }
        long forward = rnd.nextInt(3) == 0 ? windowMicros(p) : rnd.nextLong(1 + Math.min(windowMicros(p), 5_000_000));
        latest = Math.min(Checks.MAX_CLOCK, latest + forward);
        ticker.set(latest);
      }
    }
  }

  // ------------------------------------------------------------------------------------------
  // Issue 26, finding 6: a supplied clock that lags the wall clock never admits more.
  // ------------------------------------------------------------------------------------------

  /**
   * Issue 26, finding 6: with a manual ticker, an acquire at T0 + 10 ms on a limit of 1 per 100 ms,
   * 1.5 s of wall time while the ticker moved to T0 + 50 ms, and a second acquire was allowed on Redis,
   * on every algorithm: the key's TTL had run out on the server's clock while the supplied clock still
   * counted the state. Memory and PostgreSQL refused. On every backend, every algorithm at once: the
   * second acquire comes once real time has passed the moment any store's own clock could have dropped
   * the state ({@link #shortExpiryOutlives}), and is refused, as the limit or as an invalid clock.
   */
  @Test
  void aSuppliedClockThatLagsTheWallClockNeverAdmitsMore() {
    ManualTicker ticker = newTicker();
    long t0 = ticker.nowMicros();
    Duration w = Duration.ofMillis(100);
    String n = "tck-" + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffffffL) + "-lag-";
    List<Policy> ps = new ArrayList<>();
    for (Policy p : List.of(Policy.fixedWindow(n + "fw", 1, w), Policy.slidingWindow(n + "sw", 1, w),
        Policy.tokenBucket(n + "tb", 1, 1, w), Policy.gcra(n + "gcra", 1, w, 1), Policy.slidingLog(n + "sl", 1, w))) {
      if (supports(p.algorithm())) {
        ps.add(p);
      }
    }
    ticker.set(t0 + 10_000);
    List<RateLimiter> ls = new ArrayList<>();
    long start = System.nanoTime();
    for (Policy p : ps) {
      RateLimiter l = released(newLimiterWithShortExpiry(p, ticker));
      ls.add(l);
      assertThat(l.tryAcquire("lag").allowed()).as("the first acquire under %s", p).isTrue();
    }
    // The longest a state here matters (two windows, the sliding window's), what the store keeps it
    // beyond that, and a little for the store's own expiry to act.
    long dropped = start + w.multipliedBy(2).plus(shortExpiryOutlives()).plusMillis(50).toNanos();
    for (long left; (left = dropped - System.nanoTime()) > 0; ) {
      LockSupport.parkNanos(Math.min(left, TimeUnit.MILLISECONDS.toNanos(10)));
    }
    ticker.set(t0 + 50_000);
    SoftAssertions.assertSoftly(soft -> {
      for (int i = 0; i < ps.size(); i++) {
        Decision d = ls.get(i).tryAcquire("lag");
        soft.assertThat(d.reason()).as("40 ms later on the ticker, %d ms later in real time, under %s: %s",
            (System.nanoTime() - start) / 1_000_000, ps.get(i), d).isIn(Reason.LIMIT_EXCEEDED, Reason.INVALID_CLOCK);
      }
    });
  }

  // ------------------------------------------------------------------------------------------
  // Issue 14, finding 11: state from the far future is corrupt, on every backend the same way.
  // ------------------------------------------------------------------------------------------

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void stateFromTheFarFutureIsCorruptState(String algorithm) {
    long tolerance = Checks.CLOCK_TOLERANCE_MICROS;
    for (long ahead : new long[] {tolerance - 60_000_000L, tolerance + 86_400_000_000L}) {
      Policy p = policy(alg(algorithm), 3);
      ManualTicker t = newTicker();
      long now = t.nowMicros();
      RateLimiter l = limiter(p, t);
      t.set(now + ahead); // a clock that far ahead writes the state
      Ticket ticket = l.tryAcquire("future").ticket().orElseThrow();
      t.set(now);
      Decision d = l.tryAcquire("future");
      String where = "a state written " + ahead + " us ahead of the clock, " + p;
      if (ahead < tolerance) {
        // within the tolerance it is not corrupt (the versioned-store engine may refuse a reading behind a
        // record's last write by more than its own, smaller clockTolerance)
        assertThat(d.reason()).as("within the tolerance: %s", where)
            .isIn(Reason.WITHIN_LIMIT, Reason.LIMIT_EXCEEDED, Reason.INVALID_CLOCK);
        continue;
      }
      assertThat(d.allowed()).as(where).isFalse();
      assertThat(d.reason()).as(where).isEqualTo(Reason.CORRUPT_STATE);
      assertThat(l.peek("future").reason()).as("peek: %s", where).isEqualTo(Reason.CORRUPT_STATE);
      // nothing goes back into it (a store-backed limiter reports the corrupt record as FAILED)
      assertThat(l.refund(ticket)).as("refund: %s", where).isIn(Refund.NO_EFFECT, Refund.FAILED);
      l.reset("future");
      assertThat(l.tryAcquire("future").allowed()).as("after reset: %s", where).isTrue();
    }
  }

  // ------------------------------------------------------------------------------------------
  // Bad input: the exact messages of Checks.
  // ------------------------------------------------------------------------------------------

  @Test
  void badKeysAreRefusedWithExactMessages() {
    Policy p = policy("fixed-window", 3);
    RateLimiter l = limiter(p, newTicker());
    assertThatThrownBy(() -> l.tryAcquire(null)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("key is null; a key must be a non-blank string");
    assertThatThrownBy(() -> l.tryAcquire("")).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("key is empty; a key must be a non-blank string");
    assertThatThrownBy(() -> l.tryAcquire(" \t ")).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("key \" \\u0009 \" is blank; a key must contain a non-whitespace character (whitespace inside a key is kept)");
    assertThatThrownBy(() -> l.tryAcquire("ab\uD800c")).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("key \"ab\\ud800c\" has an unpaired UTF-16 surrogate at index 2; a key must be well-formed Unicode so that distinct keys hash to distinct ids");
    assertThatThrownBy(() -> l.tryAcquire("x\uDC00")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unpaired UTF-16 surrogate at index 1");
    assertThatThrownBy(() -> l.peek(null)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> l.tryAcquireAsync("", 1)).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void badPermitsAreRefusedWithExactMessages() {
    Policy p = policy("fixed-window", 3);
    RateLimiter l = limiter(p, newTicker());
    assertThatThrownBy(() -> l.tryAcquire("k", 0)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("permits 0 is below 1; ask for at least one permit");
    assertThatThrownBy(() -> l.tryAcquire("k", -5)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("permits -5 is below 1; ask for at least one permit");
    assertThatThrownBy(() -> l.tryAcquire("k", 4)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("permits 4 exceeds 3, the most policy '" + p.name() + "' can ever grant at once; such a request could never be allowed");
    assertThat(l.tryAcquire("k", 3).allowed()).as("nothing was charged by the bad calls").isTrue();
  }

  /**
   * Issue 14, finding 10: caller input never becomes a store failure. Keys with NUL and other
   * control characters, and 100 kB keys, are decided like any key on every store (the memory tier
   * refuses a key over its cap with an IllegalArgumentException); a lone surrogate is refused by the
   * core's key rules; nothing is STORE_UNAVAILABLE, which under FailureMode.open would be no limit.
   */
  @Test
  void callerStringsNeverBecomeAStoreFailure() {
    Policy p = policy("fixed-window", 2);
    RateLimiter l = limiter(p, newTicker());
    String big = "k".repeat(100_000);
    OptionalInt cap = maxKeyLength();
    List<String> keys = new ArrayList<>(List.of("nul\u0000key", "nul", "\u0000", "tab\tand\u0001\u007f", "\uFFFF\uFFFE"));
    if (cap.isEmpty() || cap.getAsInt() >= big.length()) {
      keys.add(big);
      keys.add(big + "\u0000");
    } else {
      assertThatThrownBy(() -> l.tryAcquire(big)).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("(maxKeyLength)");
    }
    for (String k : keys) {
      for (int i = 0; i < 2; i++) {
        Decision d = l.tryAcquire(k);
        assertThat(d.reason()).as("key %s, call %d", Checks.quote(k), i).isEqualTo(Reason.WITHIN_LIMIT);
      }
      assertThat(l.tryAcquire(k).reason()).as("each key is its own budget: %s", Checks.quote(k))
          .isEqualTo(Reason.LIMIT_EXCEEDED);
      assertThat(l.peek(k).reason()).isEqualTo(Reason.LIMIT_EXCEEDED);
    }
    assertThatThrownBy(() -> l.tryAcquire("lone\uD800")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unpaired UTF-16 surrogate");
  }

  @Test
  void keysOverTheLengthCapAreRefused() {
    OptionalInt cap = maxKeyLength();
    Policy p = policy("fixed-window", 3);
    RateLimiter l = limiter(p, newTicker());
    if (cap.isEmpty()) {
      assertThat(l.tryAcquire("k".repeat(4096)).allowed()).as("hashed stores accept long keys").isTrue();
      return;
    }
    int n = cap.getAsInt();
    assertThat(l.tryAcquire("k".repeat(n)).allowed()).isTrue();
    assertThatThrownBy(() -> l.tryAcquire("k".repeat(n + 1))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("key \"kkkk")
        .hasMessageEndingWith("...(" + (n + 1) + " chars) is " + (n + 1)
            + " UTF-16 code units long; the memory tier accepts at most " + n
            + " (maxKeyLength): shorten or hash the key, or raise maxKeyLength");
    // An emoji counts two code units.
    String emoji = "\uD83D\uDE00".repeat(n / 2) + "x";
    assertThatThrownBy(() -> l.tryAcquire(emoji)).isInstanceOf(IllegalArgumentException.class);
  }
}
