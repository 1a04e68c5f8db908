package dev.sluice.memory;

import dev.sluice.Algorithm;
import dev.sluice.ClockedRateLimiter;
import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.internal.AlgorithmKind;
import dev.sluice.internal.Checks;
import dev.sluice.internal.SlotTable;
import dev.sluice.internal.TicketSpending;
import dev.sluice.model.Outcome;
import dev.sluice.model.ReferenceModel;
import java.security.SecureRandom;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The second bounding strategy of the memory tier (nginx {@code limit_req} style): a fixed array of
 * {@code slots} limiter states; a key hashes, with a per-instance random seed, to one slot; keys that
 * collide share a budget; nothing is ever evicted and memory never grows with the number of keys.
 *
 * <p>Compared with {@link MemoryRateLimiter}: no key is ever refused for a full table, at the price
 * of colliding keys throttling each other (with {@code n} active keys over {@code s} slots, a key
 * shares its slot with about {@code n/s} others). The seed is drawn from {@link SecureRandom} per
 * instance, so an attacker who does not know it cannot aim keys at a victim's slot by precomputing
 * collisions; the mixing function is a seeded 64-bit FNV-1a with a murmur finalizer, fast and well
 * distributed but not a cryptographic PRF.
 *
 * <p>A call without a key ({@code null}) uses one shared default slot: throttled, never unlimited.
 * {@link #reset(String, Policy)} clears a slot's budget but keeps the slot. {@link #occupiedSlots()}
 * counts the slots whose state still matters.
 *
 * <p><b>Budgets and memory.</b> A budget is the policy name and the key, as in the memory tier: the
 * slot arrays are kept per budget family (a policy name and an algorithm), so a per-call override
 * with the same name and other numbers shares the name's array (the numbers of the latest call apply
 * to the state at its next hit), and one of the same name and another algorithm gets an array of
 * its own. At most {@link #MAX_FAMILIES} families are kept, each a table of {@code slots + 1}
 * states built on first use ({@code SlotTable}): memory is bounded by {@code MAX_FAMILIES * (slots + 1)} states whatever the overrides, and
 * a call that would add a family past the cap is refused with {@link IllegalArgumentException}.
 *
 * <p>The exact sliding log is refused: its state grows with its limit and cannot live in a fixed slot.
 */
public final class HashedSlotRateLimiter implements ClockedRateLimiter {
  /** The most budget families (policy name and algorithm) one instance keeps, the default policy's included. */
  public static final int MAX_FAMILIES = 64;

  private final Policy policy;
  private final Ticker ticker;
  private final int slots;
  private final long seed;
  private final ConcurrentHashMap<Family.Key, Family> families = new ConcurrentHashMap<>();
  private final Family defaultFamily;
  private final Ticket.Issuer issuer = new Ticket.Issuer();
  private final RateLimitListener listener;

  private HashedSlotRateLimiter(Builder b, long seed) {
    this.policy = b.policy;
    this.slots = b.slots;
    this.ticker = b.ticker;
    this.listener = b.listener;
    this.seed = seed;
    this.defaultFamily = newFamily(policy);
    families.put(Family.Key.of(policy), defaultFamily);
  }

  /** {@code slots} slots (plus the default slot) for {@code policy}, on the system clock. */
  public static HashedSlotRateLimiter of(Policy policy, int slots) {
    return of(policy, slots, Ticker.system());
  }

  public static HashedSlotRateLimiter of(Policy policy, int slots, Ticker ticker) {
    return builder(policy, slots).ticker(ticker).build();
  }

  /** {@code slots} slots (plus the default slot) for {@code policy}; the clock and a listener are set on the builder. */
  public static Builder builder(Policy policy, int slots) {
    return new Builder(policy, slots);
  }

  @Override public Policy policy() {
    return policy;
  }

  @Override public Ticker ticker() {
    return ticker;
  }

  /** Budget families kept (tests). */
  int families() {
    return families.size();
  }

  public int slots() {
    return slots;
  }

  /** The slot {@code key} maps to; {@code slots()} for the shared default slot of a null key. */
  public int slotOf(String key) {
    return defaultFamily.slots.indexOf(key);
  }

  /** Slots (over every policy, default slots included) whose state still matters now. */
  public int occupiedSlots() {
    long now = ticker.nowMicros();
    int n = 0;
    for (Family f : families.values()) {
      Algorithm alg = f.policy.algorithm();
      int[] live = {0};
      f.slots.forEachBuilt(w -> {
        EntryLock.lock(w);
        try {
          if (ReferenceModel.expiresAt(alg, w) > now) {
            live[0]++;
          }
        } finally {
          EntryLock.unlock(w);
        }
      });
      n += live[0];
    }
    return n;
  }

  @Override public Decision tryAcquire(String key, long permits, Policy p) {
    return tryAcquireAt(key, permits, p, ticker.nowMicros());
  }

  @Override public Decision tryAcquireAt(String key, long permits, Policy p, long now) {
    if (key != null) {
      Checks.key(key);
    }
    Checks.permits(permits, p.algorithm().limit(), p.name());
    return reported(acquire(key, permits, p, now), key);
  }

  private Decision acquire(String key, long permits, Policy p, long now) {
    if (!Checks.validClock(now)) {
      return Decision.refused(p, Reason.INVALID_CLOCK, 0, 0, 0);
    }
    long[] w = slot(p, key);
    Outcome out = new Outcome();
    EntryLock.lock(w);
    try {
      ReferenceModel.acquire(p.algorithm(), w, now, permits, out);
    } finally {
      EntryLock.unlock(w);
    }
    return out.allowed()
        ? Decision.allowed(p, out.remaining(), out.resetAt(), issuer.issue(p, key == null ? "" : key, permits, out.stamp()))
        : out.refusal(p);
  }

  /** One decision event per acquire, as on every limiter (a peek is no decision). */
  private Decision reported(Decision d, String key) {
    listener.onDecision(d, key);
    return d;
  }

  @Override public Decision peek(String key, Policy p) {
    return peekAt(key, p, ticker.nowMicros());
  }

  @Override public Decision peekAt(String key, Policy p, long now) {
    if (key != null) {
      Checks.key(key);
    }
    if (!Checks.validClock(now)) {
      return Decision.refused(p, Reason.INVALID_CLOCK, 0, 0, 0);
    }
    long[] w = slot(p, key);
    Outcome out = new Outcome();
    EntryLock.lock(w);
    try {
      ReferenceModel.peek(p.algorithm(), w, now, out);
    } finally {
      EntryLock.unlock(w);
    }
    return out.allowed()
        ? Decision.allowed(p, out.remaining(), out.resetAt(), null)
        : out.refusal(p);
  }

  @Override public Refund refund(Ticket ticket) {
    return refundAt(ticket, ticker.nowMicros());
  }

  /** Refunds into the ticket's slot, under the rule of every tier ({@link TicketSpending}). */
  @Override public Refund refundAt(Ticket ticket, long now) {
    return TicketSpending.refund(issuer, null, FailureMode.closed(), listener, ticket, now, Checks.validClock(now), this::spend);
  }

  @Override public Settlement settle(Ticket ticket, long actualPermits) {
    return settleAt(ticket, actualPermits, ticker.nowMicros());
  }

  /**
   * Settles into the ticket's slot ({@link ReferenceModel#settle}), shared with the keys colliding
   * with it, under the rule of every tier ({@link TicketSpending}).
   */
  @Override public Settlement settleAt(Ticket ticket, long actualPermits, long now) {
    return TicketSpending.settle(issuer, null, FailureMode.closed(), listener, ticket, actualPermits, now, Checks.validClock(now),
        this::spend);
  }

  /** One locked step on the ticket's slot: a refund is a settlement of minus its permits. */
  private Refund spend(Ticket ticket, long delta, boolean refund, long now) {
    Policy p = ticket.policy();
    long[] w = slot(p, ticket.key().isEmpty() ? null : ticket.key());
    Outcome out = new Outcome();
    EntryLock.lock(w);
    try {
      ReferenceModel.settle(p.algorithm(), w, now, delta, ticket.stamp(), out);
    } finally {
      EntryLock.unlock(w);
    }
    return out.wrote() ? Refund.APPLIED : Refund.NO_EFFECT;
  }

  /** Clears the budget of {@code key}'s slot (shared with the keys that collide with it); the slot stays. */
  @Override public void reset(String key, Policy p) {
    if (key != null) {
      Checks.key(key);
    }
    long[] w = slot(p, key);
    EntryLock.lock(w);
    try {
      java.util.Arrays.fill(w, 0, w.length - 1, 0L);
    } finally {
      EntryLock.unlock(w);
    }
  }

  private long[] slot(Policy p, String key) {
    Family f = p == policy ? defaultFamily : family(Checks.notNull("policy", p));
    if (f.policy != p) {
      f.policy = p; // the latest numbers of the name time the slots' expiry
    }
    return f.slots.forKey(key);
  }

  private Family family(Policy p) {
    Family.Key k = Family.Key.of(p);
    Family f = families.get(k);
    if (f != null) {
      return f;
    }
    synchronized (families) { // so the cap is exact when threads race for new families
      f = families.get(k);
      if (f == null) {
        if (families.size() >= MAX_FAMILIES) {
          throw new IllegalArgumentException("policy '" + p.name() + "' (" + p.algorithm().getClass().getSimpleName()
              + ") would be budget family " + (families.size() + 1) + " of this HashedSlotRateLimiter, which holds at most "
              + MAX_FAMILIES + " (a family is a policy name and an algorithm, each a fixed array of " + (slots + 1)
              + " slots): reuse a policy name for overrides of its numbers, or give the other policies a limiter of their own");
        }
        f = newFamily(p);
        families.put(k, f);
      }
      return f;
    }
  }

  /** A family's slot table, on this instance's seed, so every family maps a key to the same slot. */
  private Family newFamily(Policy p) {
    AlgorithmKind.requireFixedSize(p, "HashedSlotRateLimiter");
    int words = ReferenceModel.stateWords(p.algorithm()) + 1; // state words, then the lock word
    return new Family(p, new SlotTable<>(slots, seed, i -> new long[words]));
  }

  /** The slots of one budget family (built on first use) and the latest policy decided under it. */
  private static final class Family {
    volatile Policy policy;
    final SlotTable<long[]> slots;

    Family(Policy policy, SlotTable<long[]> slots) {
      this.policy = policy;
      this.slots = slots;
    }

    record Key(String name, Class<?> algorithm) {
      static Key of(Policy p) {
        return new Key(p.name(), p.algorithm().getClass());
      }
    }
  }

  /** Fails fast on a bad value. */
  public static final class Builder {
    private final Policy policy;
    private final int slots;
    private Ticker ticker = Ticker.system();
    /** Guarded as it is set: the limiter keeps it as is. */
    private RateLimitListener listener = RateLimitListener.NONE;

    private Builder(Policy policy, int slots) {
      this.policy = Checks.notNull("policy", policy);
      this.slots = (int) Checks.positive("slots", slots);
    }

    /** The clock (default {@link Ticker#system()}, monotonic). */
    public Builder ticker(Ticker ticker) {
      this.ticker = Checks.notNull("ticker", ticker);
      return this;
    }

    /** A listener told about every decision, refund and settlement; keys are passed only if {@code includeKeys}. */
    public Builder listener(RateLimitListener listener, boolean includeKeys) {
      this.listener = RateLimitListener.guarded(Checks.notNull("listener", listener), includeKeys);
      return this;
    }

    public HashedSlotRateLimiter build() {
      return new HashedSlotRateLimiter(this, new SecureRandom().nextLong());
    }
  }
}
