package dev.sluice.compose;

import dev.sluice.ClockedRateLimiter;
import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.internal.Checks;
import dev.sluice.internal.SeededHash;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.IntFunction;

/**
 * Several limits enforced as one: a call is allowed only when every leg allows it, and no leg is
 * left charged for a call another leg refused. Build one with {@link dev.sluice.RateLimiters#all},
 * {@link dev.sluice.RateLimiters#keyed} or {@link #builder()}.
 *
 * <pre>{@code
 * RateLimiter burst     = MemoryRateLimiter.builder(Policy.tokenBucket("burst", 20, 10, Duration.ofSeconds(1))).build();
 * RateLimiter sustained = MemoryRateLimiter.builder(Policy.fixedWindow("hourly", 1000, Duration.ofHours(1))).build();
 * Composition both = RateLimiters.all(burst, sustained);
 * Decision d = both.tryAcquire("user:42");      // charged on both legs, or on neither
 * }</pre>
 *
 * <h2>What is atomic and what is compensated</h2>
 * Each leg's own check is atomic (its increment and comparison are one operation). The composition
 * as a whole is <b>not</b> one atomic operation across legs; it is made all-or-nothing like this:
 * <ol>
 *   <li><b>One clock reading.</b> The clock is read once per call and that instant is threaded into
 *       every leg that implements {@link ClockedRateLimiter} on the composition's ticker (the memory
 *       tier does), so no two legs disagree about "now". Legs that are not clocked (a remote store
 *       that reads the server's clock) decide on their own clock.
 *   <li><b>Non-mutating pre-flight.</b> With more than one leg, every clocked leg is first asked
 *       {@link ClockedRateLimiter#peekAt} at that instant. A leg predicted to refuse is checked for
 *       real (a refused check writes nothing), and the call is refused without charging any leg.
 *       This catches almost every refusal without touching the others.
 *   <li><b>Charge, then compensate.</b> Otherwise the legs are charged one by one, legs that cannot
 *       be pre-flighted (not clocked) first. When a leg still refuses (another thread took the last
 *       permit between the pre-flight and the charge, or the leg could not be pre-flighted), every
 *       leg already charged on this call is refunded with its ticket, at the same instant, in the
 *       window it was charged in. Between the charge and the refund, another caller may see that
 *       leg one charge stricter than it will end up; never weaker. A refund that fails (a remote
 *       leg's store is down) leaves that leg stricter until its window rolls, and is counted in
 *       {@link CompositionStats#failedCompensations()}.
 * </ol>
 * With a {@link SharedState}, the shared store is asked first (one round trip); the local legs are
 * consulted only when it admits, and its charge is refunded when a local leg refuses.
 *
 * <h2>Decisions</h2>
 * An allowed decision reports the most restrictive leg (least remaining, then latest reset) and
 * carries one ticket that refunds every leg and the shared state. A refused decision reports the
 * refusing leg with the longest {@code retryAfter} (then least remaining) among the legs consulted.
 * Whatever a leg throws, the legs already charged on the call are refunded first. Then: an
 * {@link IllegalArgumentException} (a key over the memory tier's length cap) is a programmer error
 * and is rethrown, not counted; an {@link Error} (out of memory, a stack overflow) is counted in
 * {@link CompositionStats#legErrors()} and rethrown, since nothing sensible can be decided in its
 * place; any other throwable (an unchecked exception, or a checked one thrown sneakily) is counted
 * in {@link CompositionStats#legErrors()} and the call is refused with {@link Reason#STORE_UNAVAILABLE},
 * {@link Path#FAILURE_MODE} and the {@code failureRetry} wait (1 s by default): a leg that cannot say
 * whether it can afford the request is not a leg that should be charged. A refund that throws while
 * compensating counts as a failed compensation, the other legs are still refunded, and an Error from
 * it is rethrown once they are.
 *
 * <h2>Keyed compositions (hashed slots)</h2>
 * With {@link Builder#slots(int)} the legs are given as factories, and a key is hashed (with a
 * per-instance random seed) to one of {@code slots} slots; each slot builds its own limiter set on
 * first use and asks its legs about one fixed slot key. So a million distinct keys build at most
 * {@code slots} limiter sets, nothing is ever evicted (an evicted limiter would hand its key a fresh
 * allowance), and keys that collide share a budget (nginx {@code limit_req}). A {@code null} key goes
 * to one shared default slot (throttled, never unlimited). {@link #reset()} clears every built slot's
 * budget but keeps the slots; {@link #close()} releases them (and closes legs that are
 * {@link AutoCloseable}); a closed composition throws {@link IllegalStateException}.
 *
 * <h2>Policy</h2>
 * {@link #policy()} is the first leg's policy. Each leg decides under its own policy, so a per-call
 * policy override other than {@link #policy()} is refused with {@link IllegalArgumentException}:
 * override on a leg, or compose a limiter for the other policy.
 */
public final class Composition implements ClockedRateLimiter, AutoCloseable {
  private static final System.Logger LOG = System.getLogger(Composition.class.getName());
  /** The retry-after of a refusal caused by a throwing leg or a failed shared store: 1 second. */
  /** Default slot count of a keyed composition. */
  public static final int DEFAULT_SLOTS = 1024;

  private final Ticker ticker;
  private final SharedState shared;
  private final Degrade degrade;
  /** The wait of a refusal no store answered (a leg threw, the shared state threw or fails closed). */
  private final long failureRetryMicros;
  private final RateLimitListener listener;
  private final boolean listening;
  private final String statsKey;
  private final String missingKey;
  private final int legCount;

  // Not keyed: one leg set. Keyed: a lazily built slot table (slots + 1 entries, the last the default slot).
  private final LegSet fixed;
  private final List<IntFunction<? extends RateLimiter>> factories;
  private final int slots;
  private final long seed;
  private final AtomicReferenceArray<LegSet> table;
  private final Object buildLock = new Object();
  private final AtomicInteger built = new AtomicInteger();
  private volatile boolean closed;
  private volatile Policy keyedPolicy;

  private final TicketBook book = new TicketBook();
  private final Ticket.Issuer issuer = new Ticket.Issuer();
  private final LongAdder decisions = new LongAdder();
  private final LongAdder refusals = new LongAdder();
  private final LongAdder legErrors = new LongAdder();
  private final LongAdder compensations = new LongAdder();
  private final LongAdder failedCompensations = new LongAdder();
  private final LongAdder sharedFailures = new LongAdder();
  private final AtomicBoolean warned = new AtomicBoolean();

  private Composition(Builder b) {
    this.shared = b.shared;
    this.degrade = b.degrade;
    this.failureRetryMicros = b.failureRetry.toNanos() / 1_000;
    this.listener = RateLimitListener.guarded(b.listener, b.includeKeys);
    this.listening = listener != RateLimitListener.NONE;
    this.statsKey = b.statsKey;
    this.missingKey = b.missingKey;
    if (b.factories.isEmpty()) {
      Ticker t = b.ticker;
      if (t == null) {
        t = Ticker.system();
        for (RateLimiter leg : b.legs) {
          if (leg instanceof ClockedRateLimiter c) {
            t = c.ticker();
            break;
          }
        }
      }
      this.ticker = t;
      this.fixed = new LegSet(b.legs.toArray(new RateLimiter[0]), ticker, null);
      this.factories = List.of();
      this.slots = 0;
      this.seed = 0;
      this.table = null;
      this.legCount = b.legs.size();
    } else {
      this.ticker = b.ticker != null ? b.ticker : Ticker.system();
      this.fixed = null;
      this.factories = List.copyOf(b.factories);
      this.slots = b.slots;
      this.seed = new SecureRandom().nextLong();
      this.table = new AtomicReferenceArray<>(slots + 1);
      this.legCount = factories.size();
    }
  }

  /** A builder; at least one leg (or leg factory) is required. */
  public static Builder builder() {
    return new Builder();
  }

  // ---------------------------------------------------------------------------------------------
  // RateLimiter
  // ---------------------------------------------------------------------------------------------

  /** The first leg's policy (of the default slot, for a keyed composition). */
  @Override public Policy policy() {
    if (fixed != null) {
      return fixed.policies[0];
    }
    Policy p = keyedPolicy;
    if (p == null) {
      p = legSet(slots).policies[0];
      keyedPolicy = p;
    }
    return p;
  }

  @Override public Ticker ticker() {
    return ticker;
  }

  @Override public Decision tryAcquire(String key) {
    return tryAcquireAt(key, 1, null, ticker.nowMicros());
  }

  @Override public Decision tryAcquire(String key, long permits) {
    return tryAcquireAt(key, permits, null, ticker.nowMicros());
  }

  @Override public Decision tryAcquire(String key, long permits, Policy p) {
    return tryAcquireAt(key, permits, p, ticker.nowMicros());
  }

  /**
   * Charges every leg (and the shared state) for {@code key} at {@code nowMicros}, or none of them.
   * {@code p} must be null or {@link #policy()}.
   */
  @Override public Decision tryAcquireAt(String key, long permits, Policy p, long nowMicros) {
    requireSync("tryAcquire", "tryAcquireAsync");
    checkPolicy(p);
    LegSet s = legsFor(key);
    s.checkPermits(permits);
    Decision d;
    if (shared == null) {
      d = acquireLegs(s, key, permits, nowMicros, null);
    } else {
      Decision sd = null;
      Throwable err = null;
      try {
        sd = shared.check(sharedKey(key), permits);
      } catch (IllegalArgumentException e) {
        throw e;
      } catch (RuntimeException e) {
        err = e;
      }
      d = afterShared(s, key, permits, nowMicros, sd, err);
    }
    record(d, key);
    return d;
  }

  @Override public CompletionStage<Decision> tryAcquireAsync(String key, long permits) {
    return tryAcquireAsync(key, permits, null);
  }

  /**
   * Asynchronous {@link #tryAcquire(String, long, Policy)}: with an asynchronous shared state, no
   * thread is held while the store answers; the local legs (in-process, fast) are then decided on the
   * thread that completes the store's answer, at the instant read when this method was called.
   * Programmer errors throw here, at once.
   */
  @Override public CompletionStage<Decision> tryAcquireAsync(String key, long permits, Policy p) {
    checkPolicy(p);
    LegSet s = legsFor(key);
    s.checkPermits(permits);
    long now = ticker.nowMicros();
    if (shared == null) {
      Decision d = acquireLegs(s, key, permits, now, null);
      record(d, key);
      return CompletableFuture.completedFuture(d);
    }
    CompletionStage<Decision> f;
    try {
      f = shared.checkAsync(sharedKey(key), permits);
    } catch (IllegalArgumentException e) {
      throw e;
    } catch (RuntimeException e) {
      f = CompletableFuture.failedFuture(e);
    }
    return f.handle((sd, err) -> {
      Decision d = afterShared(s, key, permits, now, sd, unwrap(err));
      record(d, key);
      return d;
    });
  }

  @Override public Decision peek(String key) {
    return peekAt(key, null, ticker.nowMicros());
  }

  @Override public Decision peek(String key, Policy p) {
    return peekAt(key, p, ticker.nowMicros());
  }

  /**
   * What {@link #tryAcquire(String)} would decide now, charging nothing: refused when any leg (or the
   * shared state) would refuse, reporting the most restrictive one.
   */
  @Override public Decision peekAt(String key, Policy p, long nowMicros) {
    requireSync("peek", "tryAcquireAsync");
    checkPolicy(p);
    LegSet s = legsFor(key);
    Decision best = null;
    boolean degraded = false;
    if (shared != null) {
      Decision sd = null;
      try {
        sd = shared.peek(sharedKey(key));
      } catch (IllegalArgumentException e) {
        throw e;
      } catch (RuntimeException e) {
        sd = null;
      }
      if (sd == null || storeFailed(sd)) {
        if (degrade == Degrade.FAIL_CLOSED || (sd != null && alwaysClosed(sd.reason()))) {
          Reason r = sd != null && sd.reason().isFailure() ? sd.reason() : Reason.STORE_UNAVAILABLE;
          return failure(s.policies[0], r, nowMicros, sd);
        }
        degraded = true;
      } else {
        best = sd;
      }
    }
    String k = s.legKey(key);
    for (int i = 0; i < s.legs.length; i++) {
      Decision d;
      try {
        d = s.clocked[i] != null ? s.clocked[i].peekAt(k, s.policies[i], nowMicros) : s.legs[i].peek(k, s.policies[i]);
      } catch (IllegalArgumentException e) {
        throw e;
      } catch (Throwable e) {
        return legError(s, i, e, nowMicros);
      }
      best = best == null ? d : mostRestrictive(best, d);
    }
    return degraded ? best.withPath(Path.FALLBACK) : best;
  }

  @Override public Refund refund(Ticket ticket) {
    return refundAt(ticket, ticker.nowMicros());
  }

  /**
   * Refunds every leg (and the shared state) a composed ticket charged, each in the window it was
   * counted in. {@link Refund#APPLIED} when any part was given back, {@link Refund#FAILED} when any
   * part could not be (that leg stays stricter), {@link Refund#NO_EFFECT} for a spent or foreign
   * ticket. Never throws.
   */
  @Override public Refund refundAt(Ticket ticket, long nowMicros) {
    if (!issuer.claim(ticket)) {
      return Refund.NO_EFFECT; // null, spent, or not this composition's: a foreign ticket stays refundable
    }
    Charges c = book.remove(ticket);
    if (c == null) {
      return Refund.NO_EFFECT;
    }
    boolean applied = false;
    boolean failed = false;
    for (int i = 0; i < c.legTickets.length; i++) {
      Ticket t = c.legTickets[i];
      if (t != null) {
        Refund r = refundLeg(c.set, i, t, nowMicros);
        applied |= r == Refund.APPLIED;
        failed |= r == Refund.FAILED;
      }
    }
    if (c.sharedTicket != null) {
      Refund r = refundShared(c.sharedTicket);
      applied |= r == Refund.APPLIED;
      failed |= r == Refund.FAILED;
    }
    Refund result = failed ? Refund.FAILED : applied ? Refund.APPLIED : Refund.NO_EFFECT;
    if (listening) {
      listener.onRefund(ticket.policy(), result);
    }
    return result;
  }

  @Override public Settlement settle(Ticket ticket, long actualPermits) {
    return settleAt(ticket, actualPermits, ticker.nowMicros());
  }

  /**
   * Settles every leg (and the shared state) a composed ticket charged at the actual cost, each
   * through its own ticket and under its own window rule ({@link RateLimiter#settle}), at the one
   * instant {@code nowMicros}; a leg never settles above its own limit. {@link Settlement#APPLIED}
   * when any part changed, {@link Settlement#FAILED} when any part could not be settled,
   * {@link Settlement#NO_EFFECT} for a spent or foreign ticket. A bad {@code actualPermits} throws
   * before anything is spent; store trouble never throws.
   */
  @Override public Settlement settleAt(Ticket ticket, long actualPermits, long nowMicros) {
    if (ticket != null) {
      Checks.actual(actualPermits, ticket.policy().limit(), ticket.policy().name());
    }
    if (!issuer.claim(ticket)) {
      return Settlement.NO_EFFECT; // null, spent, or not this composition's
    }
    Charges c = book.remove(ticket);
    if (c == null) {
      return Settlement.NO_EFFECT;
    }
    boolean applied = false;
    boolean failed = false;
    for (int i = 0; i < c.legTickets.length; i++) {
      Ticket t = c.legTickets[i];
      if (t != null) {
        Settlement r = settleLeg(c.set, i, t, Math.min(actualPermits, t.policy().limit()), nowMicros);
        applied |= r == Settlement.APPLIED;
        failed |= r == Settlement.FAILED;
      }
    }
    if (c.sharedTicket != null) {
      Settlement r;
      try {
        r = shared.settle(c.sharedTicket, Math.min(actualPermits, c.sharedTicket.policy().limit()));
      } catch (Error e) {
        throw e;
      } catch (Throwable e) {
        warn("the shared state's settlement threw; its reservation stays the charge", e);
        r = Settlement.FAILED;
      }
      applied |= r == Settlement.APPLIED;
      failed |= r == Settlement.FAILED;
    }
    Settlement result = failed ? Settlement.FAILED : applied ? Settlement.APPLIED : Settlement.NO_EFFECT;
    if (listening) {
      listener.onSettle(ticket.policy(), result);
    }
    return result;
  }

  /** Never throws but an {@link Error}: a leg that throws counts as a failed settlement. */
  private Settlement settleLeg(LegSet s, int i, Ticket t, long actual, long now) {
    try {
      return s.clocked[i] != null ? s.clocked[i].settleAt(t, actual, now) : s.legs[i].settle(t, actual);
    } catch (Error e) {
      throw e;
    } catch (Throwable e) {
      warn("a leg's settlement threw; its reservation stays the charge", e);
      return Settlement.FAILED;
    }
  }

  @Override public void reset(String key) {
    reset(key, null);
  }

  /**
   * Forgets {@code key}'s state on every leg and in the shared state. For a keyed composition this
   * clears the budget of {@code key}'s slot, shared with the keys that collide with it.
   */
  @Override public void reset(String key, Policy p) {
    checkPolicy(p);
    LegSet s = legsFor(key);
    String k = s.legKey(key);
    for (int i = 0; i < s.legs.length; i++) {
      s.legs[i].reset(k, s.policies[i]);
    }
    if (shared != null) {
      shared.reset(sharedKey(key));
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Beyond RateLimiter
  // ---------------------------------------------------------------------------------------------

  /**
   * Reserves {@code permits} on every leg (and the shared state): present when granted, empty when
   * refused. Hand the reservation back with {@link #release(Reservation)}.
   *
   * @throws IllegalStateException when the shared state is asynchronous: the answer is not available
   *     synchronously, and a guess would either leak the shared budget or refuse a caller who was not
   *     refused. Use {@link #reserveAsync}.
   */
  public Optional<Reservation> reserve(String key, long permits) {
    requireSync("reserve", "reserveAsync");
    return reservation(key, permits, tryAcquire(key, permits));
  }

  /** The asynchronous {@link #reserve}; works with synchronous and asynchronous shared states. */
  public CompletionStage<Optional<Reservation>> reserveAsync(String key, long permits) {
    return tryAcquireAsync(key, permits).thenApply(d -> reservation(key, permits, d));
  }

  /** Gives a reservation's permits back to every leg and the shared state; the second release does nothing. */
  public Refund release(Reservation reservation) {
    Checks.notNull("reservation", reservation);
    return reservation.ticket() == null ? Refund.NO_EFFECT : refund(reservation.ticket());
  }

  /** Permits available to {@code key} now, the least over the legs (and shared state); charges nothing. */
  public long available(String key) {
    Decision d = peek(key);
    return d.allowed() || !d.reason().isFailure() ? d.remaining() : 0;
  }

  /**
   * The limiters deciding for {@code key}: the legs, or for a keyed composition the limiter set of
   * {@code key}'s slot (built if needed), to inspect or drive one key directly.
   */
  public List<RateLimiter> limitersFor(String key) {
    return List.of(legsFor(key).legs);
  }

  /** Clears the budget of every built slot but keeps the slots (keyed), and zeroes the counters. */
  public void reset() {
    if (table != null) {
      for (int i = 0; i <= slots; i++) {
        LegSet s = table.get(i);
        if (s != null) {
          for (int j = 0; j < s.legs.length; j++) {
            s.legs[j].reset(s.slotKey, s.policies[j]);
          }
        }
      }
    }
    decisions.reset();
    refusals.reset();
    legErrors.reset();
    compensations.reset();
    failedCompensations.reset();
    sharedFailures.reset();
  }

  /** A snapshot of the counters; see {@link CompositionStats}. */
  public CompositionStats stats() {
    OptionalLong available = OptionalLong.empty();
    if (table == null && statsKey != null && !closed && (shared == null || shared.isSynchronous())) {
      try {
        available = OptionalLong.of(available(statsKey));
      } catch (RuntimeException e) {
        available = OptionalLong.empty();
      }
    }
    long n = decisions.sum();
    long r = refusals.sum();
    return new CompositionStats(legCount, table != null, slots, table != null ? built.get() : 0, available,
        n, r, n == 0 ? 0.0 : (double) r / n, legErrors.sum(), compensations.sum(), failedCompensations.sum(),
        sharedFailures.sum());
  }

  /**
   * Releases the slot limiter sets a keyed composition built (closing legs that are
   * {@link AutoCloseable}); legs given as instances are the caller's and are left alone. Afterwards
   * every decision method throws {@link IllegalStateException}: reusing a keyed composition after
   * close would rebuild its slots empty and hand every key a fresh allowance.
   */
  @Override public void close() {
    List<LegSet> released = new ArrayList<>();
    // Under the build lock, so a slot being built right now is either seen here or never stored.
    synchronized (buildLock) {
      closed = true;
      if (table == null) {
        return;
      }
      for (int i = 0; i <= slots; i++) {
        LegSet s = table.getAndSet(i, null);
        if (s != null) {
          built.decrementAndGet();
          released.add(s);
        }
      }
    }
    for (LegSet s : released) {
      for (RateLimiter leg : s.legs) {
        if (leg instanceof AutoCloseable ac) {
          try {
            ac.close();
          } catch (Exception e) {
            LOG.log(System.Logger.Level.WARNING, "closing a slot leg failed; ignored", e);
          }
        }
      }
    }
  }

  @Override public String toString() {
    return "Composition[legs=" + legCount + (table != null ? ", slots=" + slots : "")
        + (shared != null ? ", shared=" + shared + ", degrade=" + degrade : "") + "]";
  }

  // ---------------------------------------------------------------------------------------------
  // The decision
  // ---------------------------------------------------------------------------------------------

  private Decision afterShared(LegSet s, String key, long permits, long now, Decision sd, Throwable err) {
    if (err == null && sd != null && !storeFailed(sd)) {
      return sd.allowed() ? acquireLegs(s, key, permits, now, sd) : sd;
    }
    sharedFailures.increment();
    if (sd != null && sd.ticket().isPresent()) {
      // Counted by the shared limiter's own fallback, not by the store: the degrade policy decides instead.
      refundShared(sd.ticket().get());
    }
    Reason r = sd != null && sd.reason().isFailure() ? sd.reason() : Reason.STORE_UNAVAILABLE;
    if (degrade == Degrade.FAIL_CLOSED || alwaysClosed(r)) {
      return failure(s.policies[0], r, now, sd);
    }
    return acquireLegs(s, key, permits, now, null).withPath(Path.FALLBACK);
  }

  private Decision acquireLegs(LegSet s, String key, long permits, long now, Decision sd) {
    final int n = s.legs.length;
    final String k = s.legKey(key);
    Decision[] got = new Decision[n];
    int current = -1;
    try {
      if (n > 1 && s.clockedCount > 0) {
        Decision refusal = null;
        for (int i = 0; i < n; i++) {
          ClockedRateLimiter c = s.clocked[i];
          if (c == null) {
            continue;
          }
          current = i;
          Decision p = c.peekAt(k, s.policies[i], now);
          if (p.allowed() && p.remaining() >= permits) {
            continue;
          }
          // Predicted to refuse. A refused peek of one permit is exactly the refused acquire; otherwise
          // ask for real (a refused acquire writes nothing) to get the retry-after of these permits.
          Decision r = permits == 1 && !p.allowed() ? p : c.tryAcquireAt(k, permits, s.policies[i], now);
          if (r.allowed()) {
            got[i] = r; // freed in between: charged, kept or refunded below
          } else {
            refusal = refusal == null ? r : mostRestrictive(refusal, r);
          }
        }
        if (refusal != null) {
          compensate(s, got, sd, now);
          return refusal;
        }
      }
      for (int j = 0; j < n; j++) {
        int i = s.order[j];
        if (got[i] != null) {
          continue;
        }
        current = i;
        Decision d = s.clocked[i] != null
            ? s.clocked[i].tryAcquireAt(k, permits, s.policies[i], now)
            : s.legs[i].tryAcquire(k, permits, s.policies[i]);
        if (!d.allowed()) {
          compensate(s, got, sd, now);
          return d;
        }
        got[i] = d;
      }
    } catch (IllegalArgumentException e) {
      compensate(s, got, sd, now);
      throw e;
    } catch (Throwable e) {
      // Whatever was thrown (an Error, a checked exception thrown sneakily): no leg stays charged.
      compensate(s, got, sd, now);
      return legError(s, current, e, now);
    }
    return combineAllowed(s, key, permits, got, sd);
  }

  private Decision combineAllowed(LegSet s, String key, long permits, Decision[] got, Decision sd) {
    Decision best = sd;
    Ticket[] tickets = null;
    Reason reason = Reason.WITHIN_LIMIT;
    Path path = Path.PRIMARY;
    for (int i = 0; i < got.length; i++) {
      Decision d = got[i];
      best = best == null ? d : mostRestrictive(best, d);
      if (d.reason().isFailure() && reason == Reason.WITHIN_LIMIT) {
        reason = d.reason();
      }
      if (d.path().ordinal() > path.ordinal() && d.path() != Path.NEAR_CACHE) {
        path = d.path();
      }
      Optional<Ticket> t = d.ticket();
      if (t.isPresent()) {
        if (tickets == null) {
          tickets = new Ticket[got.length];
        }
        tickets[i] = t.get();
      }
    }
    Ticket sharedTicket = sd == null ? null : sd.ticket().orElse(null);
    Ticket composed = null;
    if (tickets != null || sharedTicket != null) {
      composed = issuer.issue(best.policy(), key == null ? "" : key, permits, 0);
      book.put(composed, new Charges(s, tickets == null ? new Ticket[0] : tickets, sharedTicket));
    }
    return Decision.of(true, reason, path, best.policy(), best.remaining(), best.resetAtMicros(), 0, composed);
  }

  /**
   * Refunds every leg charged on this call. A refund that throws an {@link Error} counts as failed;
   * the other legs are refunded all the same, and the first such Error is rethrown at the end.
   */
  private void compensate(LegSet s, Decision[] got, Decision sd, long now) {
    Error error = null;
    for (int i = 0; i < got.length; i++) {
      Decision d = got[i];
      if (d != null && d.ticket().isPresent()) {
        compensations.increment();
        Refund r;
        try {
          r = refundLeg(s, i, d.ticket().get(), now);
        } catch (Error e) {
          error = error == null ? e : error;
          r = Refund.FAILED;
        }
        if (r == Refund.FAILED) {
          failedCompensations.increment();
        }
      }
    }
    if (sd != null && sd.ticket().isPresent()) {
      compensations.increment();
      Refund r;
      try {
        r = refundShared(sd.ticket().get());
      } catch (Error e) {
        error = error == null ? e : error;
        r = Refund.FAILED;
      }
      if (r == Refund.FAILED) {
        failedCompensations.increment();
      }
    }
    if (error != null) {
      throw error;
    }
  }

  /** Never throws but an {@link Error}, after counting nothing: the caller counts a failed refund. */
  private Refund refundLeg(LegSet s, int i, Ticket t, long now) {
    try {
      return s.clocked[i] != null ? s.clocked[i].refundAt(t, now) : s.legs[i].refund(t);
    } catch (Error e) {
      throw e;
    } catch (Throwable e) {
      warn("a leg's refund threw; that leg stays stricter until its window rolls", e);
      return Refund.FAILED;
    }
  }

  private Refund refundShared(Ticket t) {
    try {
      return shared.refund(t);
    } catch (Error e) {
      throw e;
    } catch (Throwable e) {
      warn("the shared state's refund threw; the shared budget stays stricter until its window rolls", e);
      return Refund.FAILED;
    }
  }

  /**
   * A leg threw {@code e} (the legs charged before it are already refunded): counted in legErrors; an
   * {@link Error} is rethrown, anything else refuses the call.
   */
  private Decision legError(LegSet s, int i, Throwable e, long now) {
    legErrors.increment();
    if (e instanceof Error err) {
      throw err;
    }
    warn("a composition leg threw; the call is refused (counted in legErrors)", e);
    return failure(s.policies[Math.max(0, i)], Reason.STORE_UNAVAILABLE, now, null);
  }

  /** A failure refusal: the shared limiter's own failure-mode wait when it refused, else {@code failureRetry}. */
  private Decision failure(Policy p, Reason r, long now, Decision shared) {
    long retry = shared != null && !shared.allowed() && shared.path() == Path.FAILURE_MODE ? shared.retryAfterMicros() : failureRetryMicros;
    return Decision.of(false, r, Path.FAILURE_MODE, p, 0, now + retry, retry, null);
  }

  /**
   * The more restrictive of two decisions: a refusal beats an allowance; between refusals the longer
   * retry (then less remaining); between allowances less remaining (then the later reset).
   */
  static Decision mostRestrictive(Decision a, Decision b) {
    if (a.allowed() != b.allowed()) {
      return a.allowed() ? b : a;
    }
    if (!a.allowed() && a.retryAfterMicros() != b.retryAfterMicros()) {
      return a.retryAfterMicros() >= b.retryAfterMicros() ? a : b;
    }
    if (a.remaining() != b.remaining()) {
      return a.remaining() < b.remaining() ? a : b;
    }
    return a.resetAtMicros() >= b.resetAtMicros() ? a : b;
  }

  /**
   * True when the shared limiter did not decide on its own store: a failure reason, or its own
   * failure mode or fallback served. A {@link Path#NEAR_CACHE} refusal is the store's answer,
   * remembered; reading it as a failure would let the local legs admit what the store refused.
   */
  private static boolean storeFailed(Decision sd) {
    return sd.reason().isFailure() || sd.path() == Path.FALLBACK || sd.path() == Path.FAILURE_MODE;
  }

  /** The reasons every failure mode refuses (corrupt state, invalid clock, contention): no degrade bridges them. */
  private static boolean alwaysClosed(Reason r) {
    return FailureMode.alwaysClosed(r);
  }

  private void record(Decision d, String key) {
    decisions.increment();
    if (!d.allowed()) {
      refusals.increment();
    }
    if (listening) {
      listener.onDecision(d, key);
    }
  }

  private void warn(String what, Throwable e) {
    LOG.log(warned.compareAndSet(false, true) ? System.Logger.Level.WARNING : System.Logger.Level.DEBUG, what, e);
  }

  private static Throwable unwrap(Throwable t) {
    while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  private Optional<Reservation> reservation(String key, long permits, Decision d) {
    return d.allowed() ? Optional.of(new Reservation(key, permits, d, d.ticket().orElse(null))) : Optional.empty();
  }

  // ---------------------------------------------------------------------------------------------
  // Legs and slots
  // ---------------------------------------------------------------------------------------------

  private void checkPolicy(Policy p) {
    if (p != null && !p.equals(policy())) {
      throw new IllegalArgumentException("policy '" + p.name() + "' is not this composition's policy '" + policy().name()
          + "'; every leg decides under its own policy, so override the policy on a leg, or compose a limiter for it");
    }
  }

  private void requireSync(String method, String alternative) {
    if (shared != null && !shared.isSynchronous()) {
      throw new IllegalStateException(method + "() cannot answer synchronously: this composition's shared state is "
          + "asynchronous, and a synchronous answer would be a guess; use " + alternative + "()");
    }
  }

  private String sharedKey(String key) {
    return key == null ? missingKey : key;
  }

  private LegSet legsFor(String key) {
    if (closed) {
      throw new IllegalStateException("this composition is closed; build a new one (reusing it would hand every key a fresh allowance)");
    }
    if (fixed != null) {
      Checks.key(key);
      return fixed;
    }
    if (key == null) {
      return legSet(slots);
    }
    Checks.key(key);
    return legSet(slotOf(key));
  }

  /** The slot {@code key} hashes to (seeded FNV-1a with a murmur finalizer). */
  int slotOf(String key) {
    return SeededHash.slot(seed, key, slots);
  }

  private LegSet legSet(int slot) {
    LegSet s = table.get(slot);
    if (s != null) {
      return s;
    }
    // Built under a lock, at most once per slot: so the number of limiter sets ever built is bounded
    // by the slot count exactly, not "about", even when threads race for a fresh slot.
    synchronized (buildLock) {
      if (closed) {
        throw new IllegalStateException("this composition is closed");
      }
      s = table.get(slot);
      if (s == null) {
        RateLimiter[] legs = new RateLimiter[factories.size()];
        for (int i = 0; i < legs.length; i++) {
          legs[i] = factories.get(i).apply(slot);
          if (legs[i] == null) {
            throw new IllegalStateException("leg factory " + i + " returned null for slot " + slot);
          }
        }
        s = new LegSet(legs, ticker, slot == slots ? "slot:default" : "slot:" + slot);
        table.set(slot, s);
        built.incrementAndGet();
      }
      return s;
    }
  }

  /** One set of legs: the composition's legs, or one slot's. */
  static final class LegSet {
    final RateLimiter[] legs;
    final Policy[] policies;
    /** The leg as a clocked limiter on the composition's ticker, or null. */
    final ClockedRateLimiter[] clocked;
    final int clockedCount;
    /** The key every leg is asked about (a keyed composition's slot), or null to pass the caller's key. */
    final String slotKey;
    /** Charge order: legs that cannot be pre-flighted first, so a refusal there costs no compensation. */
    final int[] order;
    final long maxPermits;
    final String maxPermitsPolicy;

    LegSet(RateLimiter[] legs, Ticker ticker, String slotKey) {
      this.legs = legs;
      this.slotKey = slotKey;
      int n = legs.length;
      policies = new Policy[n];
      clocked = new ClockedRateLimiter[n];
      order = new int[n];
      long max = Long.MAX_VALUE;
      String maxName = null;
      int c = 0;
      for (int i = 0; i < n; i++) {
        policies[i] = Checks.notNull("policy of leg " + i, legs[i].policy());
        if (legs[i] instanceof ClockedRateLimiter cl) {
          if (cl.ticker() != ticker) {
            throw new IllegalStateException("leg " + i + " (policy '" + policies[i].name() + "') reads another ticker than the "
                + "composition; a composed decision reads one clock: build the legs on one ticker and pass it to the composition");
          }
          clocked[i] = cl;
          c++;
        }
        if (policies[i].limit() < max) {
          max = policies[i].limit();
          maxName = policies[i].name();
        }
      }
      clockedCount = c;
      int j = 0;
      for (int i = 0; i < n; i++) {
        if (clocked[i] == null) {
          order[j++] = i;
        }
      }
      for (int i = 0; i < n; i++) {
        if (clocked[i] != null) {
          order[j++] = i;
        }
      }
      maxPermits = max;
      maxPermitsPolicy = maxName;
    }

    void checkPermits(long permits) {
      if (permits < 1 || permits > maxPermits) {
        Checks.permits(permits, maxPermits, maxPermitsPolicy);
      }
    }

    String legKey(String key) {
      return slotKey != null ? slotKey : key;
    }
  }

  /** What a composed ticket charged. */
  record Charges(LegSet set, Ticket[] legTickets, Ticket sharedTicket) {}

  // ---------------------------------------------------------------------------------------------
  // Builder
  // ---------------------------------------------------------------------------------------------

  /** Fails fast: {@link IllegalArgumentException} for a bad value, {@link IllegalStateException} for a conflict. */
  public static final class Builder {
    private final List<RateLimiter> legs = new ArrayList<>();
    private final List<IntFunction<? extends RateLimiter>> factories = new ArrayList<>();
    private int slots = -1;
    private SharedState shared;
    private Degrade degrade = Degrade.LOCAL;
    private Duration failureRetry = FailureMode.DEFAULT_CLOSED_RETRY;
    private Ticker ticker;
    private RateLimitListener listener;
    private boolean includeKeys;
    private String statsKey;
    private String missingKey = "unknown";

    private Builder() {}

    /** Adds a leg (a limiter instance, decided under its own default policy with the caller's key). */
    public Builder leg(RateLimiter leg) {
      legs.add(Checks.notNull("leg", leg));
      return this;
    }

    /** Adds legs. */
    public Builder legs(RateLimiter... legs) {
      Checks.notNull("legs", legs);
      for (RateLimiter l : legs) {
        leg(l);
      }
      return this;
    }

    /**
     * Adds a leg factory of a keyed composition: {@code slot -> limiter}, called at most once per slot.
     * A factory, not an instance, because one instance cannot hold per-slot budgets.
     */
    public Builder legFactory(IntFunction<? extends RateLimiter> factory) {
      factories.add(Checks.notNull("leg factory", factory));
      return this;
    }

    /** Makes the composition keyed, with {@code slots} hashed slots (default 1024 when factories are given). */
    public Builder slots(int slots) {
      Checks.positive("slots", slots);
      this.slots = slots;
      return this;
    }

    /** The shared store consulted before the local legs. */
    public Builder sharedState(SharedState shared) {
      this.shared = Checks.notNull("shared state", shared);
      return this;
    }

    /** What to do when the shared state cannot answer (default {@link Degrade#LOCAL}). */
    public Builder degrade(Degrade degrade) {
      this.degrade = Checks.notNull("degrade", degrade);
      return this;
    }

    /**
     * The wait of a refusal that no store answered: a leg threw, or the shared state threw or fails
     * closed without a failure-mode refusal of its own (whose wait is kept). Default 1 s, at least 1 ms.
     */
    public Builder failureRetry(Duration retry) {
      this.failureRetry = Checks.atLeastOneMilli("failureRetry", retry, Checks.REFUSAL_WAIT);
      return this;
    }

    /**
     * The clock read once per decision. Default: the ticker of the first clocked leg, else
     * {@link Ticker#system()}. Every clocked leg must read this same ticker.
     */
    public Builder ticker(Ticker ticker) {
      this.ticker = Checks.notNull("ticker", ticker);
      return this;
    }

    /** Told about every composed decision and refund; keys only if {@code includeKeys}. */
    public Builder listener(RateLimitListener listener, boolean includeKeys) {
      this.listener = Checks.notNull("listener", listener);
      this.includeKeys = includeKeys;
      return this;
    }

    /**
     * The key whose availability {@link #stats()} reports for a composition that is not keyed (a
     * global ceiling's key, say). Without it, availability is absent.
     */
    public Builder statsKey(String key) {
      this.statsKey = Checks.key(key);
      return this;
    }

    /** The key a keyed composition sends to its shared state for a call without a key (default {@code "unknown"}). */
    public Builder missingKey(String key) {
      this.missingKey = Checks.key(key);
      return this;
    }

    public Composition build() {
      if (!legs.isEmpty() && !factories.isEmpty()) {
        throw new IllegalStateException("a composition takes leg instances or leg factories, not both: "
            + "factories make a keyed composition (hashed slots), instances a plain one");
      }
      if (legs.isEmpty() && factories.isEmpty()) {
        throw new IllegalStateException("a composition needs at least one leg: call leg(limiter) or legFactory(slot -> limiter)");
      }
      if (!legs.isEmpty() && slots > 0) {
        throw new IllegalStateException("slots(" + slots + ") needs leg factories, not instances: "
            + "one instance cannot hold per-slot budgets; use legFactory(slot -> limiter)");
      }
      if (!factories.isEmpty() && statsKey != null) {
        throw new IllegalStateException("statsKey is for compositions that are not keyed; a keyed composition has no single availability");
      }
      if (!factories.isEmpty() && slots < 0) {
        slots = DEFAULT_SLOTS;
      }
      return new Composition(this);
    }
  }
}
