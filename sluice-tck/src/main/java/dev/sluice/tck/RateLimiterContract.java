package dev.sluice.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sluice.Algorithm;
import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.ManualTicker;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The conformance kit every backend runs. A backend subclasses this in its tests and supplies only
 * {@link #newLimiter(Policy, Ticker)}; the kit checks that the backend decides exactly as the
 * reference model does, that it admits exactly the limit under 16 threads, that refunds and tickets
 * behave, that bad input is refused with the exact messages, and that keys and policies are
 * independent.
 *
 * <p>Every test builds its policies with fresh random names, so shared stores need no flushing
 * between tests or runs.
 */
public abstract class RateLimiterContract {

  /** Start of the kit's clock: an epoch-microsecond instant in 2024 plus a random offset. */
  private static final long EPOCH_2024 = 1_704_067_200_000_000L;

  private final List<RateLimiter> created = new ArrayList<>();

  /**
   * A fresh limiter whose default policy is {@code policy} and whose time comes from {@code ticker}.
   * Shared stores must read this ticker rather than the server's clock.
   */
  protected abstract RateLimiter newLimiter(Policy policy, Ticker ticker);

  /** Whether this backend implements {@code algorithm}; the others' tests are skipped. */
  protected boolean supports(Algorithm algorithm) {
    return true;
  }

  /**
   * Whether this backend settles tickets at their actual cost ({@code RateLimiter.settle}); the
   * settlement cases are skipped otherwise. Every Sluice backend does; a new one answers false until
   * its store step can.
   */
  protected boolean settles() {
    return true;
  }

  /** The backend's key-length cap, if it has one (the memory tier does; hashed stores do not). */
  protected OptionalInt maxKeyLength() {
    return OptionalInt.empty();
  }

  /**
   * A limiter failing over to {@code mode} on a store this test can take down and bring back, or
   * empty when the backend has no such fixture (the outage cases are then skipped).
   */
  protected Optional<Outage> outage(Policy policy, Ticker ticker, FailureMode mode) throws Exception {
    return Optional.empty();
  }

  /** A limiter over a store that a test can stop and restart. */
  public interface Outage extends AutoCloseable {
    RateLimiter limiter();

    /** The store stops answering; returns once decisions fail. */
    void down() throws Exception;

    /** The store answers again; returns once it does. */
    void up() throws Exception;
  }

  /** Events per replayed trace. */
  protected int traceLength() {
    return 10_000;
  }

  /**
   * Whether asynchronous acquires for one key issued one after another from one thread reach the
   * store in that order (one connection, or coalescing). True by default; a backend whose async
   * calls run in parallel on a pool (PostgreSQL) says false, and the burst case is skipped.
   */
  protected boolean decidesAsyncCallsInIssueOrder() {
    return true;
  }

  /** Releases a limiter after a test; closes it when it is {@link AutoCloseable}. */
  protected void release(RateLimiter limiter) throws Exception {
    if (limiter instanceof AutoCloseable c) {
      c.close();
    }
  }

  @AfterEach
  final void releaseAll() throws Exception {
    for (RateLimiter l : created) {
      release(l);
    }
    created.clear();
  }

  // ------------------------------------------------------------------------------------------
  // Policies: one template per algorithm, small numbers so traces saturate and roll often.
  // ------------------------------------------------------------------------------------------

  /** Algorithm templates the parameterized tests run over. */
  public static Stream<String> algorithms() {
    return Stream.of("fixed-window", "sliding-window", "token-bucket", "gcra", "sliding-log");
  }

  /** A policy of the given algorithm with a fresh random name and the kit's standard numbers. */
  protected static Policy policy(String algorithm, long limit) {
    return policy("tck-" + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffffffL) + "-" + algorithm, algorithm, limit);
  }

  /** A policy named {@code name} of the given algorithm with the kit's standard numbers for {@code limit}. */
  protected static Policy policy(String name, String algorithm, long limit) {
    Duration w = Duration.ofSeconds(1);
    return switch (algorithm) {
      case "fixed-window" -> Policy.fixedWindow(name, limit, w);
      case "sliding-window" -> Policy.slidingWindow(name, limit, w);
      case "token-bucket" -> Policy.tokenBucket(name, limit, Math.max(1, limit / 3), w);
      case "gcra" -> Policy.gcra(name, Math.max(1, limit / 2), w, limit);
      case "sliding-log" -> Policy.slidingLog(name, limit, w);
      default -> throw new IllegalArgumentException(algorithm);
    };
  }

  private static long windowMicros(Policy p) {
    Algorithm a = p.algorithm();
    if (a instanceof Algorithm.FixedWindow f) return f.windowMicros();
    if (a instanceof Algorithm.SlidingWindow s) return s.windowMicros();
    if (a instanceof Algorithm.TokenBucket t) return t.refillPeriodMicros();
    if (a instanceof Algorithm.Gcra g) return g.periodMicros();
    return ((Algorithm.SlidingLog) a).windowMicros();
  }

  /**
   * A manual clock some way into 2024: at a start fixed per test class, so a build decides the same
   * trace every time; at a random start under {@code -Dsluice.explore} (the start is in every
   * assertion's description, to turn into a fixed case).
   */
  protected final ManualTicker newTicker() {
    long span = 1_000_000_000_000L;
    long offset = Integer.getInteger("sluice.explore", 0) > 0 ? ThreadLocalRandom.current().nextLong(span)
        : Math.floorMod(getClass().getName().hashCode() * 0x9E37_79B9L, span);
    return Ticker.manual(EPOCH_2024 + offset);
  }

  private RateLimiter limiter(Policy p, Ticker t) {
    assumeTrue(supports(p.algorithm()), "backend does not implement " + p.algorithm().id());
    RateLimiter l = newLimiter(p, t);
    created.add(l);
    return l;
  }

  private static String alg(String algorithm) {
    return algorithm;
  }

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
  // Issue 14, finding 3 ("overflow is a silent allow"): the largest numbers every bound accepts, and
  // clocks that step back, decide exactly as the model on every backend, and a step back never admits
  // what the latest reading refuses.
  // ------------------------------------------------------------------------------------------

  /** Policies at the edges of every bound of the core ({@code Checks}), per algorithm. */
  static List<Policy> extremePolicies(String algorithm) {
    long max = 1L << 52, maxWindow = 1L << 48, ms = 1_000;
    String n = "tck-" + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffffffL) + "-x";
    List<Algorithm> as = switch (algorithm) {
      case "fixed-window" -> List.of(new Algorithm.FixedWindow(max, maxWindow), new Algorithm.FixedWindow(max, ms),
          new Algorithm.FixedWindow(1, maxWindow));
      case "sliding-window" -> List.of(new Algorithm.SlidingWindow(max / maxWindow, maxWindow),
          new Algorithm.SlidingWindow(max / ms, ms), new Algorithm.SlidingWindow(3, 7 * ms));
      case "token-bucket" -> List.of(new Algorithm.TokenBucket(max / ms, max, ms), new Algorithm.TokenBucket(16, 9, maxWindow),
          new Algorithm.TokenBucket(max / ms, 9, ms));
      case "gcra" -> List.of(new Algorithm.Gcra(max - ms, ms, 1), new Algorithm.Gcra(max - 1_000_000, 1_000_000, 1),
          new Algorithm.Gcra(5, maxWindow, 8), new Algorithm.Gcra(1_000_000_000_000L, 1_000_000, 1_000));
      case "sliding-log" -> List.of(new Algorithm.SlidingLog(max, ms), new Algorithm.SlidingLog(3, maxWindow));
      default -> throw new IllegalArgumentException(algorithm);
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
        long start = s == 0 ? newTicker().nowMicros() : s == 1 ? dev.sluice.internal.Checks.MAX_CLOCK - 3 * windowMicros(p) : 1;
        edgeTrace(p, start, 0xb0 ^ start);
      }
    }
  }

  private void edgeTrace(Policy p, long start, long seed) {
    SplittableRandom rnd = new SplittableRandom(seed ^ p.algorithm().hashCode());
    ManualTicker ticker = Ticker.manual(start);
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
      if (now + step <= dev.sluice.internal.Checks.MAX_CLOCK) {
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
        latest = Math.min(dev.sluice.internal.Checks.MAX_CLOCK, latest + forward);
        ticker.set(latest);
      }
    }
  }

  // ------------------------------------------------------------------------------------------
  // Issue 14, finding 11: state from the far future is corrupt, on every backend the same way.
  // ------------------------------------------------------------------------------------------

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void stateFromTheFarFutureIsCorruptState(String algorithm) {
    long tolerance = dev.sluice.internal.Checks.CLOCK_TOLERANCE_MICROS;
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
  // Concurrency: 16 threads admit exactly the limit, never more.
  // ------------------------------------------------------------------------------------------

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void sixteenThreadsOnOneHotKeyAdmitExactlyTheLimit(String algorithm) throws Exception {
    long limit = 200;
    Policy p = policy(alg(algorithm), limit);
    RateLimiter l = limiter(p, newTicker());
    long admitted = hammer(16, 25, i -> l.tryAcquire("hot").allowed());
    assertThat(admitted).isEqualTo(limit);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void sixteenThreadsOnManyKeysAdmitExactlyTheLimitPerKey(String algorithm) throws Exception {
    int keys = 20;
    long limit = 10;
    Policy p = policy(alg(algorithm), limit);
    RateLimiter l = limiter(p, newTicker());
    AtomicLongArray perKey = new AtomicLongArray(keys);
    hammer(16, 20, i -> {
      int k = i % keys;
      boolean ok = l.tryAcquire("many-" + k).allowed();
      if (ok) {
        perKey.incrementAndGet(k);
      }
      return ok;
    });
    for (int k = 0; k < keys; k++) {
      assertThat(perKey.get(k)).as("key many-%d", k).isEqualTo(limit);
    }
  }

  /** Sync and async callers on one hot key (a coalescing backend mixes them in one batch) admit exactly the limit. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void sixteenThreadsMixingSyncAndAsyncOnOneHotKeyAdmitExactlyTheLimit(String algorithm) throws Exception {
    long limit = 200;
    Policy p = policy(alg(algorithm), limit);
    RateLimiter l = limiter(p, newTicker());
    long admitted = hammer(16, 25, i -> i % 2 == 0 ? l.tryAcquire("hot").allowed()
        : l.tryAcquireAsync("hot", 1).toCompletableFuture().join().allowed());
    assertThat(admitted).isEqualTo(limit);
  }

  /**
   * Many asynchronous acquires for one key issued at one instant (which a coalescing backend sends
   * as batches behind the first) are decided exactly as the reference model decides them one after
   * another in the order they were issued: remaining, reset, retry and tickets included.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void anAsyncBurstOnOneKeyIsDecidedAsTheModelInIssueOrder(String algorithm) {
    assumeTrue(decidesAsyncCallsInIssueOrder(), "the backend's async calls for one key may reach the store in any order");
    SplittableRandom rnd = new SplittableRandom(algorithm.hashCode());
    Policy p = policy(alg(algorithm), 40);
    ManualTicker ticker = newTicker();
    RateLimiter backend = limiter(p, ticker);
    ReferenceLimiter model = new ReferenceLimiter();
    for (int round = 0; round < 3; round++) {
      long now = ticker.nowMicros();
      int n = 150;
      long[] permits = new long[n];
      List<CompletableFuture<Decision>> got = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        permits[i] = rnd.nextInt(3) == 0 ? 1 + rnd.nextInt(4) : 1;
        got.add(backend.tryAcquireAsync("burst", permits[i]).toCompletableFuture());
      }
      for (int i = 0; i < n; i++) {
        Decision want = model.acquire(p, "burst", permits[i], now);
        assertThat(got.get(i).join()).as("round %d, request %d of %d permits at t=%d", round, i, permits[i], now).isEqualTo(want);
      }
      ticker.advanceMicros(windowMicros(p) / 3 + round);
    }
  }

  /**
   * Runs {@code perThread} calls on each of {@code threads} threads released together; counts trues.
   * Public for a backend's own concurrency tests.
   */
  public static long hammer(int threads, int perThread, Function<Integer, Boolean> call) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      CountDownLatch start = new CountDownLatch(1);
      AtomicLong admitted = new AtomicLong();
      List<Future<?>> fs = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int base = t * perThread;
        fs.add(pool.submit(() -> {
          start.await();
          for (int i = 0; i < perThread; i++) {
            if (call.apply(base + i)) {
              admitted.incrementAndGet();
            }
          }
          return null;
        }));
      }
      start.countDown();
      for (Future<?> f : fs) {
        f.get(120, TimeUnit.SECONDS);
      }
      return admitted.get();
    } finally {
      pool.shutdownNow();
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

  public static Stream<String> windowAlgorithms() {
    return Stream.of("fixed-window", "sliding-window", "sliding-log");
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
   * nothing, and an overrun is charged to the current window.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("windowAlgorithms")
  void afterTheWindowRolledAnUnderrunDoesNothingAndAnOverrunChargesTheCurrentWindow(String algorithm) {
    Policy p = policy(alg(algorithm), 10);
    ManualTicker ticker = newTicker();
    RateLimiter l = settlingLimiter(p, ticker);
    Ticket under = l.tryAcquire("k", 6).ticket().orElseThrow();
    Ticket over = l.tryAcquire("k", 1).ticket().orElseThrow();
    ticker.advanceMicros(windowMicros(p) * 3);
    Decision before = l.peek("k");
    assertThat(before.remaining()).isEqualTo(10);
    assertThat(l.settle(under, 0)).isEqualTo(Settlement.NO_EFFECT);
    assertThat(l.peek("k")).isEqualTo(before);
    assertThat(l.settle(over, 5)).isEqualTo(Settlement.APPLIED);
    assertThat(l.peek("k").remaining()).as("the overrun of 4 lands in the current window").isEqualTo(6);
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

  /** Buckets have no windows: a settlement after any time still gives back (up to capacity) or charges. */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"token-bucket", "gcra"})
  void aBucketSettlesWhateverTimePassed(String algorithm) {
    Policy p = policy(alg(algorithm), 10);
    ManualTicker ticker = newTicker();
    RateLimiter l = settlingLimiter(p, ticker);
    Ticket t = l.tryAcquire("k", 8).ticket().orElseThrow();
    ticker.advanceMicros(windowMicros(p) / 10);
    Decision before = l.peek("k");
    assertThat(l.settle(t, 2)).isEqualTo(Settlement.APPLIED);
    assertThat(l.peek("k").remaining()).isEqualTo(Math.min(10, before.remaining() + 6));
    Ticket u = l.tryAcquire("k", 1).ticket().orElseThrow();
    ticker.advanceMicros(windowMicros(p) * 20);
    assertThat(l.settle(u, 10)).isEqualTo(Settlement.APPLIED);
    assertThat(l.peek("k").remaining()).as("a full bucket charged 9 more").isEqualTo(1);
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
    if (algorithm.equals("fixed-window") || algorithm.equals("sliding-window") || algorithm.equals("sliding-log")) {
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

  /** Issue 13: with the store down, the fallback's own rule (a key over its length cap) threw instead of deciding. */
  @Test
  void aFallbackThatRejectsTheKeyDuringAnOutageStillDecides() throws Exception {
    Policy p = policy("fixed-window", 3);
    ManualTicker ticker = newTicker();
    RateLimiter local = dev.sluice.memory.MemoryRateLimiter.builder(p).ticker(ticker).build();
    Optional<Outage> o = outage(p, ticker, FailureMode.fallback(local));
    assumeTrue(o.isPresent(), "backend has no outage fixture");
    try (Outage outage = o.get()) {
      outage.down();
      String longKey = "k".repeat(dev.sluice.memory.MemoryRateLimiter.DEFAULT_MAX_KEY_LENGTH + 1);
      Decision d = outage.limiter().tryAcquire(longKey);
      assertThat(d.allowed()).isFalse();
      assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
      assertThat(d.reason()).isIn(Reason.STORE_UNAVAILABLE, Reason.TIMEOUT);
      Decision async = outage.limiter().tryAcquireAsync(longKey, 1).toCompletableFuture().get(10, TimeUnit.SECONDS);
      assertThat(async.path()).isEqualTo(Path.FAILURE_MODE);
      assertThat(outage.limiter().peek(longKey).path()).isEqualTo(Path.FAILURE_MODE);
      assertThat(outage.limiter().tryAcquire("short").path()).isEqualTo(Path.FALLBACK);
    }
  }

  /** Issue 13: a ticket the fallback issued during an outage and refunded after recovery left the fallback charged. */
  @Test
  void aFallbackTicketRefundedAfterRecoveryReturnsItsPermitToTheFallback() throws Exception {
    Policy p = policy("fixed-window", 3);
    ManualTicker ticker = newTicker();
    RateLimiter local = dev.sluice.memory.MemoryRateLimiter.builder(p).ticker(ticker).build();
    Optional<Outage> o = outage(p, ticker, FailureMode.fallback(local));
    assumeTrue(o.isPresent(), "backend has no outage fixture");
    try (Outage outage = o.get()) {
      outage.down();
      Decision d = outage.limiter().tryAcquire("k");
      assertThat(d.path()).isEqualTo(Path.FALLBACK);
      assertThat(local.peek("k").remaining()).isEqualTo(2);
      outage.up();
      assertThat(outage.limiter().tryAcquire("other").path()).isEqualTo(Path.PRIMARY);
      assertThat(outage.limiter().refund(d.ticket().orElseThrow())).isEqualTo(Refund.APPLIED);
      assertThat(local.peek("k").remaining()).isEqualTo(3);
      // (The store itself may have been charged too: a call that timed out can still run once a
      // frozen server wakes, which errs on the strict side.)
    }
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

  // ------------------------------------------------------------------------------------------
  // Bad input: the exact messages of dev.sluice.internal.Checks.
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
    java.util.List<String> keys = new ArrayList<>(List.of("nul\u0000key", "nul", "\u0000", "tab\tand\u0001\u007f", "\uFFFF\uFFFE"));
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
        assertThat(d.reason()).as("key %s, call %d", dev.sluice.internal.Checks.quote(k), i).isEqualTo(Reason.WITHIN_LIMIT);
      }
      assertThat(l.tryAcquire(k).reason()).as("each key is its own budget: %s", dev.sluice.internal.Checks.quote(k))
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
