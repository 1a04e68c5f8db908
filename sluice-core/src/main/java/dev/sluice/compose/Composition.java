package dev.sluice.compose;

import dev.sluice.ClockedRateLimiter;
import dev.sluice.Decision;
import dev.sluice.Path;
import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.internal.Checks;
import dev.sluice.internal.SlotTable;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
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
 * consulted only when it admits, and its charge is refunded when a local leg refuses. When it cannot
 * answer, the composition's {@link FailureMode} decides its part ({@link Builder#failureMode}).
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
 * {@link Path#FAILURE_MODE} and the wait of the composition's {@link Builder#failureMode failure mode}
 * (its {@link FailureMode#retryAfter()}, 1 s by default): a leg that cannot say
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
 *
 * <p>This file is over 500 lines because it is the public face (every {@link RateLimiter} method, with
 * its contract) and its public nested {@link Builder}; the decision itself is in {@link AllOf} (whose
 * charge loop {@link AllOf#charge} also runs over charges of their own keys and permits) and the
 * package-private {@code SharedFirst} and {@code LegSet}.
 */
public final class Composition implements ClockedRateLimiter, AutoCloseable {
  private static final System.Logger LOG = System.getLogger(Composition.class.getName());
  /** Default slot count of a keyed composition. */
  public static final int DEFAULT_SLOTS = 1024;

  private final Ticker ticker;
  /** The shared state asked before the legs, or null. */
  private final SharedFirst shared;
  private final AllOf allOf;
  private final CompositionCounters counters = new CompositionCounters();
  private final RateLimitListener listener;
  private final boolean listening;
  private final String statsKey;
  private final int legCount;

  // Not keyed: one leg set. Keyed: a slot table of leg sets, each built on first use.
  private final LegSet fixed;
  private final SlotTable<LegSet> table;
  private volatile boolean closed;
  private volatile Policy keyedPolicy;

  private Composition(Builder b) {
    this.shared = b.shared == null ? null : new SharedFirst(b.shared, b.failureMode, b.missingKey, counters);
    this.allOf = new AllOf(counters, b.failureMode.retryAfter().toNanos() / 1_000, shared);
    this.listener = RateLimitListener.guarded(b.listener, b.includeKeys);
    this.listening = listener != RateLimitListener.NONE;
    this.statsKey = b.statsKey;
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
      this.table = null;
      this.legCount = b.legs.size();
    } else {
      this.ticker = b.ticker != null ? b.ticker : Ticker.system();
      this.fixed = null;
      List<IntFunction<? extends RateLimiter>> factories = List.copyOf(b.factories);
      int slots = b.slots;
      Ticker t = ticker;
      this.table = new SlotTable<>(slots, new SecureRandom().nextLong(), slot -> LegSet.ofSlot(factories, slot, slots, t));
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
      p = defaultSlot().policies[0];
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
    Decision d = shared == null
        ? allOf.acquire(s, key, permits, nowMicros, null)
        : shared.acquire(s, key, permits, nowMicros, allOf);
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
      Decision d = allOf.acquire(s, key, permits, now, null);
      record(d, key);
      return CompletableFuture.completedFuture(d);
    }
    return shared.acquireAsync(s, key, permits, now, allOf).thenApply(d -> {
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
    return shared == null ? allOf.peek(s, key, nowMicros, null, false) : shared.peek(s, key, nowMicros, allOf);
  }

  @Override public Refund refund(Ticket ticket) {
    return refundAt(ticket, ticker.nowMicros());
  }

  /**
   * Refunds every leg (and the shared state) a composed ticket charged, each in the window it was
   * counted in. {@link Refund#UNKNOWN} when any part's outcome is unknown, else {@link Refund#FAILED}
   * when any part could not be given back (that leg stays stricter), else {@link Refund#APPLIED} when
   * any part was, else {@link Refund#NO_EFFECT} (also for a spent or foreign ticket). After
   * {@code UNKNOWN} or {@code FAILED} the ticket may be retried: the retry spends only the parts that
   * did not answer, each the one application or no effect. Never throws.
   */
  @Override public Refund refundAt(Ticket ticket, long nowMicros) {
    Refund result = allOf.refund(ticket, nowMicros);
    if (result == null) {
      return Refund.NO_EFFECT;
    }
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
   * {@link Settlement#NO_EFFECT} for a spent or foreign ticket, with {@link Settlement#UNKNOWN}
   * first and retries as for {@link #refundAt}. A bad {@code actualPermits} throws before anything
   * is spent; store trouble never throws.
   */
  @Override public Settlement settleAt(Ticket ticket, long actualPermits, long nowMicros) {
    Settlement result = allOf.settle(ticket, actualPermits, nowMicros);
    if (result == null) {
      return Settlement.NO_EFFECT;
    }
    if (listening) {
      listener.onSettle(ticket.policy(), result);
    }
    return result;
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
    legsFor(key).reset(key);
    if (shared != null) {
      shared.reset(key);
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
      table.forEachBuilt(s -> s.reset(null));
    }
    counters.reset();
  }

  /** Composed tickets whose charges are still kept: neither refunded, settled nor dropped (tests). */
  int bookedTickets() {
    return allOf.bookedTickets();
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
    long n = counters.decisions.sum();
    long r = counters.refusals.sum();
    return new CompositionStats(legCount, table != null, table != null ? table.slots() : 0, table != null ? table.built() : 0,
        available, n, r, n == 0 ? 0.0 : (double) r / n, counters.legErrors.sum(), counters.compensations.sum(),
        counters.failedCompensations.sum(), counters.sharedFailures.sum());
  }

  /**
   * Releases the slot limiter sets a keyed composition built (closing legs that are
   * {@link AutoCloseable}); legs given as instances are the caller's and are left alone. Afterwards
   * every decision method throws {@link IllegalStateException}: reusing a keyed composition after
   * close would rebuild its slots empty and hand every key a fresh allowance.
   */
  @Override public void close() {
    closed = true;
    if (table == null) {
      return;
    }
    for (LegSet s : table.close()) {
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
    return "Composition[legs=" + legCount + (table != null ? ", slots=" + table.slots() : "")
        + (shared != null ? ", " + shared : "") + "]";
  }

  /** The slot {@code key} hashes to (seeded FNV-1a with a murmur finalizer). */
  int slotOf(String key) {
    return table.indexOf(key);
  }

  private void record(Decision d, String key) {
    counters.decisions.increment();
    if (!d.allowed()) {
      counters.refusals.increment();
    }
    if (listening) {
      listener.onDecision(d, key);
    }
  }

  private Optional<Reservation> reservation(String key, long permits, Decision d) {
    return d.allowed() ? Optional.of(new Reservation(key, permits, d, d.ticket().orElse(null))) : Optional.empty();
  }

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

  private LegSet legsFor(String key) {
    if (closed) {
      throw new IllegalStateException("this composition is closed; build a new one (reusing it would hand every key a fresh allowance)");
    }
    if (fixed != null) {
      Checks.key(key);
      return fixed;
    }
    if (key != null) {
      Checks.key(key);
    }
    return slot(table.indexOf(key));
  }

  /** The default slot's legs (a keyed composition's policy is its first leg's). */
  private LegSet defaultSlot() {
    return slot(table.slots());
  }

  private LegSet slot(int index) {
    LegSet s = table.at(index);
    if (s == null) {
      throw new IllegalStateException("this composition is closed");
    }
    return s;
  }

  // ---------------------------------------------------------------------------------------------
  // Builder
  // ---------------------------------------------------------------------------------------------

  /** Fails fast: {@link IllegalArgumentException} for a bad value, {@link IllegalStateException} for a conflict. */
  public static final class Builder {
    /** The default: the shared limit is lifted while its store cannot answer, and the legs decide alone. */
    private static final FailureMode LEGS_DECIDE = FailureMode.open((policy, reason, cause) -> { });

    private final List<RateLimiter> legs = new ArrayList<>();
    private final List<IntFunction<? extends RateLimiter>> factories = new ArrayList<>();
    private int slots = -1;
    private SharedState shared;
    private FailureMode failureMode = LEGS_DECIDE;
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

    /**
     * What a call decides when the shared state cannot answer (an exception, a timeout, or a decision
     * its limiter did not take on its own store), applied to the shared state's part as a store-backed
     * limiter applies its mode around its store; the local legs then decide as always:
     * <ul>
     *   <li>{@link FailureMode#open(FailureMode.FailureAlert)} (the default, with no alert): the shared
     *       limit is lifted, the alert is told, and the legs decide alone, marked {@link Path#FALLBACK}:
     *       available, limited per process until the store recovers.
     *   <li>{@link FailureMode#closed(Duration)}: refused, marked {@link Path#FAILURE_MODE}, legs untouched.
     *   <li>{@link FailureMode#fallback(RateLimiter)}: a local limiter (a memory tier of the shared
     *       policy, say) stands in for the shared state, then the legs decide, marked {@link Path#FALLBACK};
     *       its tickets refund into it.
     * </ul>
     * The mode's {@link FailureMode#retryAfter()} is the wait of every refusal no store answered: the
     * mode's own, and a leg that threw (a shared limiter's own failure-mode refusal keeps its wait).
     * Corrupt state, an invalid clock and contention refuse under every mode.
     */
    public Builder failureMode(FailureMode failureMode) {
      this.failureMode = Checks.notNull("failureMode", failureMode);
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
