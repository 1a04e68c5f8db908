package dev.sluice.memory;

import static dev.sluice.memory.EntryLock.isRefusing;
import static dev.sluice.memory.EntryLock.lock;
import static dev.sluice.memory.EntryLock.refusedWithoutLock;
import static dev.sluice.memory.EntryLock.unlock;

import dev.sluice.Algorithm;
import dev.sluice.ClockedRateLimiter;
import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.KeyOverrides;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.internal.Checks;
import dev.sluice.internal.TicketSpending;
import dev.sluice.model.Outcome;
import dev.sluice.model.ReferenceModel;
import dev.sluice.model.SlidingLogState;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The memory tier: per-instance, zero I/O, bounded in both the number of keys and their length.
 *
 * <p><b>Per instance.</b> With N instances behind a load balancer this admits about N times the
 * limit. Use the Redis or PostgreSQL tier when that matters.
 *
 * <p><b>Bounded.</b> At most {@code maxKeys} keys are tracked (default 10,000), each of at most
 * {@code maxKeyLength} UTF-16 code units (default 512; an emoji counts two). When the table is full
 * and no tracked key has expired, a check for an untracked key is refused with
 * {@link Reason#KEY_TABLE_FULL} and a {@code retryAfter} until the earliest tracked entry can be
 * reclaimed: its expiry, or the moment the next reclaim scan may run (50 ms after the last) when
 * that is later. A client that waits it gets in unless another took the place first; {@link #peek}
 * gives the same refusal. Tracked keys keep their counts and are never evicted, so a spray of unique
 * keys can neither exhaust memory nor reset anybody's window. {@link #trackedKeys()} never exceeds
 * {@code maxKeys}: a place is reserved by compare-and-set before an entry is put. A few fixed keys
 * that every call is charged to (a global ceiling's) can be {@linkplain #pin pinned} outside
 * {@code maxKeys}, so that no spray can crowd them out.
 *
 * <p><b>Structure.</b> One {@link ConcurrentHashMap} per budget family (a policy name and an
 * algorithm) from key to entry. A family's table is made by its first tracked key and goes with its
 * last entry, so per-call policy names cost no more than keys: there are never more tables than
 * tracked keys (plus the default policy's and those holding pinned keys), a name refused on a full
 * table ({@link Reason#KEY_TABLE_FULL}) leaves none behind, and making or finding a table costs the
 * same however many there are. An entry is a
 * bare {@code long[]}: the reference model's state words ({@link ReferenceModel#stateWords}: two for
 * the fixed window, token bucket and GCRA, three for the sliding window) followed by a lock word. A
 * tracked key costs a map node, the key and one 40-byte array (48 for the sliding window); its expiry
 * is not stored but computed from the state when the reclaim scan asks ({@link ReferenceModel#expiresAt}).
 * The lock ({@link EntryLock}, shared with {@link HashedSlotRateLimiter}) is a compare-and-set on
 * the lock word, held only for the few instructions of a step: threads on different keys never
 * share a lock, and there is no global lock on the hot path. The lock word also carries a version,
 * bumped by every unlock, and a hint that the last locked step refused: while it is set, a check first decides on a snapshot of the state read without the lock
 * and validated by the version (a seqlock read), and returns a refusal from it without writing. A
 * key held at its limit then costs reads only, and threads refusing on it do not contend.
 * (The exact sliding log keeps a growing list, so its entries carry a {@link SlidingLogState} too.)
 *
 * <p><b>Allocation.</b> {@link #tryConsume(String, long)} allocates nothing. {@link #tryAcquire}
 * returns a {@link Decision} (and, when allowed, its {@link Ticket}); the JIT removes them only when
 * the whole call inlines into the caller, which JDK 17 usually declines for a method this size.
 *
 * <p><b>Reclaiming.</b> Expired entries are removed by a scan of the table. The scan is aimed at
 * the moment the earliest tracked entry becomes reclaimable ({@code nextScanAt}), but never runs
 * within 50 ms of the previous one. A check only compares the clock with {@code nextScanAt} (one
 * volatile read); the one check that passes it and wins a flag runs the scan. So a scan visits at
 * most {@code maxKeys} entries, at most once per 50 ms, and only when something is reclaimable:
 * its cost is bounded per unit of time (20 scans a second at most) and, under load, amortized over
 * the checks in between, a constant per check. Capacity returns within 50 ms of a spray ageing out,
 * whatever the window. A map-and-heap of expiries would make each check pay O(log n) instead, to
 * save scans that the 50 ms floor already makes cheap.
 *
 * <p>Time is monotonic ({@link Ticker#system()}), injectable for tests.
 *
 * <p>Why one file of this size: the check's hot path reads the table's scan schedule and counts as
 * fields of this class; the entry lock, which needs no such field, is {@link EntryLock}.
 */
public final class MemoryRateLimiter implements ClockedRateLimiter, KeyOverrides {
  /** Default cap on tracked keys. */
  public static final int DEFAULT_MAX_KEYS = 10_000;
  /** Default cap on key length, in UTF-16 code units. */
  public static final int DEFAULT_MAX_KEY_LENGTH = 512;
  /** The floor between two reclaim scans. */
  public static final long RECLAIM_FLOOR_MICROS = 50_000;

  private final Policy policy;
  private final Ticker ticker;
  private final int maxKeys;
  private final int maxKeyLength;
  private final RateLimitListener listener;
  private final boolean listening;
  private final Table defaultTable;
  /**
   * One table per budget family: a policy name and an algorithm (see {@link #table}). A table goes
   * with its last entry ({@link #release}), so there are never more tables than tracked keys, plus the
   * default policy's, the pinned keys' and those a thread is filling right now.
   */
  private final ConcurrentHashMap<TableKey, Table> tables = new ConcurrentHashMap<>();
  private final Ticket.Issuer issuer;
  private final AtomicInteger size = new AtomicInteger();
  /** Lower bound of the earliest expiry of any tracked entry; Long.MAX_VALUE when none. */
  private final AtomicLong earliestExpiry = new AtomicLong(Long.MAX_VALUE);
  private volatile long nextScanAt = Long.MAX_VALUE;
  private volatile long lastScanAt = Long.MIN_VALUE / 2;
  private final AtomicBoolean scanning = new AtomicBoolean();
  private final AtomicLong scans = new AtomicLong();
  private final AtomicLong tableVisits = new AtomicLong();
  /** What {@link #insert} returns when the table went with its last entry before the new one was put. */
  private static final Object TABLE_GONE = new Object();
  /** The keys' overrides ({@link KeyOverrides}): a budget (policy name, key) to the policy that decides it. */
  private final ConcurrentHashMap<Budget, Policy> overrides = new ConcurrentHashMap<>();
  /** Set by the first override and never cleared: a limiter that never had one tests this one field per decision. */
  private volatile boolean overriding;

  private MemoryRateLimiter(Builder b) {
    this.policy = b.policy;
    this.ticker = b.ticker;
    this.maxKeys = b.maxKeys;
    this.maxKeyLength = b.maxKeyLength;
    this.listener = RateLimitListener.guarded(b.listener, b.includeKeys);
    this.listening = listener != RateLimitListener.NONE;
    this.defaultTable = new Table(policy, TableKey.of(policy));
    defaultTable.holds.incrementAndGet(); // for good: the default policy's table is never dropped
    tables.put(defaultTable.key, defaultTable);
    this.issuer = b.issuer != null ? b.issuer : new Ticket.Issuer();
  }

  public static Builder builder(Policy policy) {
    return new Builder(policy);
  }

  @Override public Policy policy() {
    return policy;
  }

  @Override public Ticker ticker() {
    return ticker;
  }

  /**
   * Keys tracked right now, over every policy this limiter has seen, pinned keys ({@link #pin}) not
   * counted. Never above {@code maxKeys}, even while threads race for the last places.
   */
  public int trackedKeys() {
    return size.get();
  }

  /** Entries in the tables right now (tests: at rest it equals {@link #trackedKeys()}). */
  int entries() {
    int n = 0;
    for (Table t : tables.values()) {
      n += t.map.size();
    }
    return n;
  }

  public int maxKeys() {
    return maxKeys;
  }

  /** Tables right now, the default policy's included (tests). */
  int tables() {
    return tables.size();
  }

  /** Tables visited so far by reclaim scans and by the creation of tables (tests: the work per decision). */
  long tableVisits() {
    return tableVisits.get();
  }

  /** Reclaim scans run so far (for tests and metrics). */
  public long reclaimScans() {
    return scans.get();
  }

  @Override public Decision tryAcquire(String key, long permits, Policy p) {
    return tryAcquireAt(key, permits, p, ticker.nowMicros());
  }

  @Override public Decision tryAcquireAt(String key, long permits, Policy p, long now) {
    if (key == null) {
      Checks.key(null);
    }
    if (permits < 1 || permits > p.algorithm().limit()) {
      Checks.permits(permits, p.algorithm().limit(), p.name());
    }
    Decision d = acquire(overriding ? effective(p, key) : p, key, permits, now);
    if (listening) {
      listener.onDecision(d, key);
    }
    return d;
  }

  private Decision acquire(Policy p, String key, long permits, long now) {
    if (!Checks.validClock(now)) {
      return Decision.refused(p, Reason.INVALID_CLOCK, 0, 0, 0);
    }
    if (now >= nextScanAt) {
      reclaim(now, false);
    }
    Outcome out = new Outcome();
    while (true) {
      Table t = table(p, now);
      if (t == null) {
        Checks.key(key, maxKeyLength);
        return tableFull(p, now);
      }
      Object e = entry(t, key, now);
      if (e == null) {
        return tableFull(p, now);
      }
      if (e == TABLE_GONE) {
        continue; // the table went with its last entry under us: look it up again
      }
      now = Math.max(now, lastScanAt); // see reclaim(): never decide before a scan that reclaimed
      long[] w = words(e);
      if (!(e instanceof LogEntry) && refusedWithoutLock(p.algorithm(), w, now, permits, out)) {
        return out.refusal(p);
      }
      if (!lock(w)) {
        continue; // reclaimed or reset under us (its table may have gone with it): look it up again
      }
      long expiry;
      try {
        if (e instanceof LogEntry log) {
          log.log.acquire((Algorithm.SlidingLog) p.algorithm(), now, permits, out);
        } else {
          ReferenceModel.acquire(p.algorithm(), w, now, permits, out);
        }
        expiry = expiresAt(p, e, w);
      } finally {
        unlock(w, !out.allowed());
      }
      noteExpiry(t, e, expiry); // lowers the bookkeeping at a fresh entry's first step, mostly: see insert()
      if (out.allowed() && t.siblings) {
        evictSiblings(t, key);
      }
      return out.allowed()
          ? Decision.allowed(p, out.remaining(), out.resetAt(), issuer.issue(this, p, key, permits, out.stamp()))
          : out.refusal(p);
    }
  }

  /**
   * {@code tryAcquire(key, permits).allowed()} under the default policy, allocating nothing: no
   * {@link Decision}, no {@link Ticket} (so nothing to refund). For hot paths that need only the verdict.
   */
  @Override public boolean tryConsume(String key, long permits) {
    if (listening || overriding || key == null || permits < 1 || permits > policy.algorithm().limit()) {
      return tryAcquire(key, permits, policy).allowed();
    }
    if (defaultTable.policy != policy) {
      defaultTable.policy = policy; // an override of the same name was decided meanwhile
    }
    long now = ticker.nowMicros();
    return now > 0 && consume(defaultTable, key, permits, now);
  }

  /**
   * The locked step of {@link #acquire} returning only the verdict. It repeats those few lines on
   * purpose: its scratch {@link Outcome} never crosses a call boundary, so C2 scalar-replaces it
   * whether or not this method inlines into its caller; a step shared with {@code acquire} would have
   * to take the Outcome as an argument, and when that shared method is not inlined, it is allocated.
   */
  private boolean consume(Table t, String key, long permits, long now) {
    if (now >= nextScanAt) {
      reclaim(now, false);
    }
    Outcome out = new Outcome();
    while (true) {
      Object e = entry(t, key, now); // never TABLE_GONE: the default table stays
      if (e == null) {
        return false;
      }
      now = Math.max(now, lastScanAt); // see reclaim()
      long[] w = words(e);
      if (!(e instanceof LogEntry) && refusedWithoutLock(policy.algorithm(), w, now, permits, out)) {
        return false;
      }
      if (!lock(w)) {
        continue;
      }
      long expiry;
      try {
        if (e instanceof LogEntry log) {
          log.log.acquire((Algorithm.SlidingLog) policy.algorithm(), now, permits, out);
        } else {
          ReferenceModel.acquire(policy.algorithm(), w, now, permits, out);
        }
        expiry = expiresAt(policy, e, w);
      } finally {
        unlock(w, !out.allowed());
      }
      noteExpiry(t, e, expiry);
      if (out.allowed() && t.siblings) {
        evictSiblings(t, key);
      }
      return out.allowed();
    }
  }

  /**
   * The key's entry, created if untracked; null when the key table is full, {@link #TABLE_GONE} when
   * {@code t} went with its last entry before one could be put in it.
   */
  private Object entry(Table t, String key, long now) {
    Object e = t.map.get(key);
    if (e == null) {
      Checks.key(key, maxKeyLength);
      e = insert(t, key, now);
    }
    return e;
  }

  @Override public Decision peek(String key, Policy p) {
    return peekAt(key, p, ticker.nowMicros());
  }

  @Override public Decision peekAt(String key, Policy p, long now) {
    Checks.key(key, maxKeyLength);
    if (overriding) {
      p = effective(Checks.notNull("policy", p), key);
    }
    if (!Checks.validClock(now)) {
      return Decision.refused(p, Reason.INVALID_CLOCK, 0, 0, 0);
    }
    Table t = existing(p); // a peek makes no table: an absent family decides like an absent key
    Outcome out = new Outcome();
    Object e = t == null ? null : t.map.get(key);
    if (e == null) {
      if (!room(t, key, now)) {
        return tableFull(p, now);
      }
      peekFresh(p, now, out);
    } else {
      long[] w = words(e);
      if (lock(w)) {
        try {
          if (e instanceof LogEntry log) {
            log.log.peek((Algorithm.SlidingLog) p.algorithm(), now, out);
          } else {
            ReferenceModel.peek(p.algorithm(), w, now, out);
          }
        } finally {
          unlock(w);
        }
      } else {
        peekFresh(p, now, out); // reclaimed or reset under us
      }
    }
    return out.allowed()
        ? Decision.allowed(p, out.remaining(), out.resetAt(), null)
        : out.refusal(p);
  }

  private static void peekFresh(Policy p, long now, Outcome out) {
    if (p.algorithm() instanceof Algorithm.SlidingLog sl) {
      new SlidingLogState().peek(sl, now, out);
    } else {
      ReferenceModel.peek(p.algorithm(), new long[ReferenceModel.STATE_SIZE], now, out);
    }
  }

  @Override public Refund refund(Ticket ticket) {
    return refundAt(ticket, ticker.nowMicros());
  }

  /**
   * Refunds one of this limiter's tickets at {@code now}: the rule of every tier
   * ({@link TicketSpending}), here one locked step on the key's entry.
   */
  @Override public Refund refundAt(Ticket ticket, long now) {
    return TicketSpending.refund(issuer, this, FailureMode.closed(), listener, ticket, now, Checks.validClock(now), this::spend);
  }

  @Override public Settlement settle(Ticket ticket, long actualPermits) {
    return settleAt(ticket, actualPermits, ticker.nowMicros());
  }

  /**
   * Settles one of this limiter's tickets at {@code now} ({@link ReferenceModel#settle}), under the
   * rule of every tier ({@link TicketSpending}): one locked step on the key's entry. An overrun on a
   * key whose entry was reclaimed opens it again (it is charged to the current window); on a full
   * table it cannot be, and is {@link Settlement#FAILED} (the ticket kept for a retry).
   */
  @Override public Settlement settleAt(Ticket ticket, long actualPermits, long now) {
    return TicketSpending.settle(issuer, this, FailureMode.closed(), listener, ticket, actualPermits, now, Checks.validClock(now),
        this::spend);
  }

  /** The memory step of a refund or a settlement, for {@link TicketSpending}. */
  private Refund spend(Ticket ticket, long delta, boolean refund, long now) {
    return refund ? giveBack(ticket, -delta, now) : settleStep(ticket, ticket.policy(), delta, now);
  }

  private Refund giveBack(Ticket ticket, long permits, long now) {
    Policy p = ticket.policy();
    Table t = tables.get(TableKey.of(p));
    Object e = t == null ? null : t.map.get(ticket.key());
    if (e == null) {
      return Refund.NO_EFFECT; // reclaimed: its window ended long ago
    }
    long[] w = words(e);
    if (!lock(w)) {
      return Refund.NO_EFFECT;
    }
    Outcome out = new Outcome();
    try {
      if (e instanceof LogEntry log) {
        log.log.refund((Algorithm.SlidingLog) p.algorithm(), now, permits, ticket.stamp(), out);
      } else {
        ReferenceModel.refund(p.algorithm(), w, now, permits, ticket.stamp(), out);
      }
      if (out.wrote()) {
        noteExpiry(t, e, expiresAt(p, e, w)); // a refund can bring a bucket's expiry closer
      }
    } finally {
      unlock(w);
    }
    return out.wrote() ? Refund.APPLIED : Refund.NO_EFFECT;
  }

  private Refund settleStep(Ticket ticket, Policy p, long delta, long now) {
    Outcome out = new Outcome();
    while (true) {
      Table t = delta > 0 ? table(p, now) : existing(p);
      Object e = t == null ? null : t.map.get(ticket.key());
      if (e == null) {
        if (delta < 0) {
          return Refund.NO_EFFECT; // reclaimed: its window ended long ago
        }
        e = t == null ? null : insert(t, ticket.key(), now);
        if (e == null) {
          return Refund.FAILED; // a full table: the overrun cannot be kept
        }
        if (e == TABLE_GONE) {
          continue;
        }
        now = Math.max(now, lastScanAt); // see reclaim()
      }
      long[] w = words(e);
      if (!lock(w)) {
        if (delta < 0) {
          return Refund.NO_EFFECT;
        }
        continue; // reclaimed or reset under us: an overrun is charged to a fresh entry
      }
      long expiry;
      try {
        if (e instanceof LogEntry log) {
          log.log.settle((Algorithm.SlidingLog) p.algorithm(), now, delta, ticket.stamp(), out);
        } else {
          ReferenceModel.settle(p.algorithm(), w, now, delta, ticket.stamp(), out);
        }
        expiry = expiresAt(p, e, w);
      } finally {
        unlock(w, delta > 0 || isRefusing(w));
      }
      if (out.wrote()) {
        noteExpiry(t, e, expiry);
        if (t.siblings) {
          evictSiblings(t, ticket.key());
        }
      }
      return out.wrote() ? Refund.APPLIED : Refund.NO_EFFECT;
    }
  }

  @Override public void reset(String key, Policy p) {
    Checks.key(key, maxKeyLength);
    Checks.notNull("policy", p);
    Table t = tables.get(TableKey.of(overriding ? effective(p, key) : p)); // the override stays; the count goes
    if (t == null) {
      return;
    }
    Object e = t.map.get(key);
    if (e != null) {
      long[] w = words(e);
      if (lock(w)) {
        kill(t, key, e, w);
      }
    }
  }

  /**
   * Removes every entry whose state no longer matters at {@code now}. Runs when a check passes the
   * aimed time, or when an untracked key finds the table full; {@code force} skips the 50 ms floor
   * (tests only).
   */
  void reclaim(long now, boolean force) {
    if (!force && (now < nextScanAt || now < lastScanAt + RECLAIM_FLOOR_MICROS)) {
      return;
    }
    if (!scanning.compareAndSet(false, true)) {
      return;
    }
    try {
      // Checked again under the flag: a caller whose reading is older than a scan that finished
      // while it waited scans nothing new, and would move lastScanAt back.
      if (!force && now < lastScanAt + RECLAIM_FLOOR_MICROS) {
        return;
      }
      // Published before any entry is removed: a caller that misses a removed entry (or finds it
      // dead) reads this afterwards and decides no earlier than now. Otherwise a caller holding an
      // older clock reading could recreate the key and reopen the very window that just expired.
      // It never moves back: a caller that missed an entry an earlier scan removed relies on it.
      if (now > lastScanAt) {
        lastScanAt = now;
      }
      long earliest = Long.MAX_VALUE;
      long visited = 0;
      earliestExpiry.set(Long.MAX_VALUE);
      for (Table t : tables.values()) {
        visited++;
        for (Map.Entry<String, Object> me : t.map.entrySet()) {
          Object e = me.getValue();
          if (t.pins && t.uncounted.contains(e)) {
            continue; // pinned: reclaiming it would free no place
          }
          long[] w = words(e);
          if (!lock(w)) {
            continue; // already reset
          }
          long exp = expiresAt(t.policy, e, w);
          if (exp <= now) {
            kill(t, me.getKey(), e, w);
            continue;
          }
          unlock(w);
          earliest = Math.min(earliest, exp);
        }
      }
      lowerEarliest(earliest);
      scans.incrementAndGet();
      tableVisits.addAndGet(visited);
      nextScanAt = Math.max(earliestExpiry.get(), now + RECLAIM_FLOOR_MICROS);
    } finally {
      scanning.set(false);
    }
  }

  /**
   * Adds an entry for an untracked key; null when the table is full and nothing could be reclaimed.
   * A place is reserved before the entry is put and given back after an entry is removed, so the
   * entries in the tables never outnumber {@code size}, and {@code size} never passes {@code maxKeys}.
   * A pinned key takes no place. The new entry's expiry enters the earliest-expiry bookkeeping after
   * its first step, when it is known ({@link #acquire}); until then its state is empty, so a scan
   * may reclaim it, which costs its caller a second lookup at worst. The entry holds its table
   * ({@link #release}) from before it is put: {@link #TABLE_GONE} when the table went first.
   */
  private Object insert(Table t, String key, long now) {
    boolean pinned = t.pins && t.pinned.contains(key);
    if (!pinned && !reserve(now)) {
      return null; // a refusal on a full table writes nothing to the table
    }
    if (t.holds.getAndIncrement() < 0) {
      if (!pinned) {
        size.decrementAndGet();
      }
      tables.remove(t.key, t); // in case the thread that dropped it has not unregistered it yet
      return TABLE_GONE;
    }
    Algorithm alg = t.policy.algorithm();
    Object fresh = alg instanceof Algorithm.SlidingLog ? new LogEntry() : new long[ReferenceModel.stateWords(alg) + 1];
    if (pinned) {
      t.uncounted.add(fresh);
    }
    Object prior = t.map.putIfAbsent(key, fresh);
    if (prior != null) {
      if (pinned) {
        t.uncounted.remove(fresh);
      } else {
        size.decrementAndGet();
      }
      release(t); // the prior entry holds the table
      return prior;
    }
    return fresh;
  }

  /** Takes one of the {@code maxKeys} places, reclaiming once if none is free; false when the table is full. */
  private boolean reserve(long now) {
    for (int attempt = 0; ; attempt++) {
      for (int n = size.get(); n < maxKeys; n = size.get()) {
        if (size.compareAndSet(n, n + 1)) {
          return true;
        }
      }
      if (attempt > 0 || now < earliestExpiry.get()) {
        return false;
      }
      reclaim(now, false);
    }
  }

  /**
   * True when an untracked {@code key} could be inserted now, as {@link #insert} would find (a
   * reclaim scan runs first when one is due): for {@link #peek}, which must answer what
   * {@code tryAcquire} would.
   */
  private boolean room(Table t, String key, long now) {
    if (size.get() < maxKeys || t != null && t.pins && t.pinned.contains(key)) {
      return true;
    }
    if (now >= earliestExpiry.get()) {
      reclaim(now, false);
    }
    return size.get() < maxKeys;
  }

  /**
   * The refusal of an untracked key on a full table: wait until the earliest tracked entry can be
   * reclaimed, and no less than until the next scan may run (50 ms after the last one).
   */
  private Decision tableFull(Policy p, long now) {
    long earliest = earliestExpiry.get();
    if (earliest == Long.MAX_VALUE) {
      earliest = now + 1; // every entry is new and before its first step: one is about to be known
    }
    long at = Math.max(earliest, lastScanAt + RECLAIM_FLOOR_MICROS);
    return Decision.refused(p, Reason.KEY_TABLE_FULL, 0, at, at - now);
  }

  /**
   * {@inheritDoc}
   *
   * <p>In memory an override is this limiter's alone (another instance has counts of its own), kept
   * until cleared, outside {@code maxKeys}. Its budget is the same entry as the caller's policy's when
   * the algorithm is the same, so the count carries over both ways.
   */
  @Override public void override(String key, Policy policy) {
    Checks.key(key, maxKeyLength);
    Checks.notNull("policy", policy);
    overriding = true;
    overrides.put(new Budget(policy.name(), key), policy);
  }

  @Override public boolean clearOverride(String key, Policy policy) {
    Checks.key(key, maxKeyLength);
    return overrides.remove(new Budget(Checks.notNull("policy", policy).name(), key)) != null;
  }

  @Override public Optional<Policy> overrideOf(String key, Policy policy) {
    Checks.key(key, maxKeyLength);
    return Optional.ofNullable(overrides.get(new Budget(Checks.notNull("policy", policy).name(), key)));
  }

  /** The policy that decides {@code key} under {@code p}'s name: its override, else {@code p}. */
  private Policy effective(Policy p, String key) {
    Policy o = key == null ? null : overrides.get(new Budget(p.name(), key));
    return o == null ? p : o;
  }

  /** A budget: a policy's name and a key. */
  private record Budget(String name, String key) {}

  /**
   * Keeps {@code key}'s budget under {@code policy} outside {@code maxKeys}: its entry takes no place
   * in the table, so no spray of other keys can crowd it out. For the few fixed keys every call is
   * charged to (a global ceiling's: {@link CeilingRateLimiter} pins its key), never for keys taken
   * from requests, which would make the table unbounded again. The reclaim scan leaves a pinned
   * entry alone (removing it would free no place). An entry the key already had keeps its place
   * until it is reclaimed or reset; it comes back without one. Idempotent.
   */
  public MemoryRateLimiter pin(String key, Policy policy) {
    Checks.key(key, maxKeyLength);
    Checks.notNull("policy", policy);
    while (true) {
      Table t = newTable(policy); // or the family's table, if it has one
      if (t.holds.getAndIncrement() < 0) {
        tables.remove(t.key, t); // it went with its last entry: make the next one
        continue;
      }
      t.pins = true; // before the key is in the set: an insert that sees the key sees the flag
      if (!t.pinned.add(key)) {
        release(t); // pinned already: one hold a key is enough (and the table has it)
      } // else the hold stays for good: a table with a pinned key is never dropped
      return this;
    }
  }

  /**
   * Enters an entry's expiry into the earliest-expiry bookkeeping, which times the reclaim scans and
   * a full table's refusals. A pinned entry stays out: it holds no place, so its expiry returns none,
   * and the scan leaves it alone.
   */
  private void noteExpiry(Table t, Object e, long expiry) {
    if (expiry < earliestExpiry.get() && !(t.pins && t.uncounted.contains(e))) {
      lowerEarliest(expiry);
    }
  }

  private void lowerEarliest(long at) {
    long cur;
    while (at < (cur = earliestExpiry.get())) {
      if (earliestExpiry.compareAndSet(cur, at)) {
        long aim = Math.max(at, lastScanAt + RECLAIM_FLOOR_MICROS);
        if (aim < nextScanAt) {
          nextScanAt = aim;
        }
        return;
      }
    }
  }

  /** When a locked entry's state stops mattering (0 for a state that never counted anything). */
  private static long expiresAt(Policy p, Object e, long[] w) {
    return e instanceof LogEntry log
        ? log.log.expiresAt((Algorithm.SlidingLog) p.algorithm())
        : ReferenceModel.expiresAt(p.algorithm(), w);
  }

  /** Marks a locked entry dead and removes it. */
  private void kill(Table t, String key, Object e, long[] w) {
    EntryLock.kill(w);
    if (t.map.remove(key, e)) {
      if (!(t.pins && t.uncounted.remove(e))) {
        size.decrementAndGet();
      }
      release(t);
    }
  }

  /**
   * Gives back one hold on {@code t} (an entry's, or an insert's that put none); the last one drops
   * the table. Holds are counted in one word that a dropped table sets to {@link Table#GONE} by
   * compare-and-set from 0, so exactly one of two racing threads wins: an insert that increments it
   * first keeps the table, and one that increments it after finds it negative and looks the family up
   * again ({@link #TABLE_GONE}). So no entry is ever put in a table that is no longer registered,
   * where it would hold a place and a budget no decision could find. The default table and a table
   * with pinned keys keep a hold for good.
   */
  private void release(Table t) {
    if (t.holds.decrementAndGet() == 0 && t.holds.compareAndSet(0, Table.GONE)) {
      tables.remove(t.key, t);
    }
  }

  /**
   * The table of {@code p}'s budgets. A budget is the policy's name and the key: a policy with the
   * same name and other numbers shares the table, and the numbers of the latest call apply to the
   * state at its next hit (a lowered limit refuses at once if the key is over it; a raised one
   * admits more), never a reset. A policy with the same name and another algorithm keeps a state
   * of another shape: it starts afresh in a table of its own, as on every shared store, where a
   * state written by another algorithm counts as absent.
   */
  private Table table(Policy p, long now) {
    Table t = existing(p);
    if (t == null) {
      if (size.get() >= maxKeys && now < earliestExpiry.get()) {
        return null; // the key table is full and nothing can be reclaimed: no new family gets a table
      }
      t = newTable(p);
      if (t.policy != p) {
        t.policy = p;
      }
    }
    return t;
  }

  /** The table of {@code p}'s family, or null when it has none; {@code p} becomes its latest definition. */
  private Table existing(Policy p) {
    Table t = p == policy ? defaultTable : tables.get(TableKey.of(Checks.notNull("policy", p)));
    if (t != null && t.policy != p) {
      t.policy = p; // the latest definition times the entries' expiry
    }
    return t;
  }

  private static long[] words(Object e) {
    return e instanceof long[] w ? w : ((LogEntry) e).words;
  }

  /**
   * The table of {@code p}'s name and algorithm, made if it has none; marks it and the tables of its
   * name siblings when it has any. The siblings are looked up by their keys (the same name under each
   * other algorithm), so making a table costs the same however many tables there are.
   */
  private Table newTable(Policy p) {
    Table t = tables.computeIfAbsent(TableKey.of(p), k -> new Table(p, k));
    tableVisits.addAndGet(1 + t.siblingKeys.length);
    for (TableKey k : t.siblingKeys) {
      Table other = tables.get(k);
      if (other != null) {
        other.siblings = true;
        t.siblings = true;
      }
    }
    return t;
  }

  /**
   * A write under one algorithm replaces what another algorithm of the same name kept for the key,
   * as a write replaces a state of another shape on every shared store: the other algorithm then
   * finds the key absent. Only tables with siblings pay for this.
   */
  private void evictSiblings(Table t, String key) {
    for (TableKey k : t.siblingKeys) {
      Table other = tables.get(k);
      Object e = other == null ? null : other.map.get(key);
      if (e != null) {
        long[] w = words(e);
        if (lock(w)) {
          kill(other, key, e, w);
        }
      }
    }
  }

  /** A budget family: the policy name and the algorithm (its state's shape). */
  private record TableKey(String name, Class<?> algorithm) {
    private static final Class<?>[] ALGORITHMS = Algorithm.class.getPermittedSubclasses();

    static TableKey of(Policy p) {
      return new TableKey(p.name(), p.algorithm().getClass());
    }

    /** The same name under every other algorithm. */
    TableKey[] siblings() {
      TableKey[] ks = new TableKey[ALGORITHMS.length - 1];
      int i = 0;
      for (Class<?> a : ALGORITHMS) {
        if (a != algorithm) {
          ks[i++] = new TableKey(name, a);
        }
      }
      return ks;
    }
  }

  private static final class Table {
    /** {@link #holds} of a dropped table: negative, whatever inserts still add to it. */
    static final int GONE = Integer.MIN_VALUE;

    final TableKey key;
    /** The keys of the tables that may hold this name under another algorithm. */
    final TableKey[] siblingKeys;
    /** Entries in the table, plus one per pinned key, plus one for good for the default table; {@link #GONE} once dropped. */
    final AtomicInteger holds = new AtomicInteger();
    /** The latest policy decided under this name and algorithm. */
    volatile Policy policy;
    /** True when another algorithm has a table under the same name. */
    volatile boolean siblings;
    final ConcurrentHashMap<String, Object> map = new ConcurrentHashMap<>();
    /** True once a key was pinned here: only then do inserts and removals consult the two sets below. */
    volatile boolean pins;
    /** The pinned keys ({@link #pin}). */
    final java.util.Set<String> pinned = ConcurrentHashMap.newKeySet();
    /** The entries that took no place in {@code size} (pinned), by identity (entries do not override equals). */
    final java.util.Set<Object> uncounted = ConcurrentHashMap.newKeySet();

    Table(Policy policy, TableKey key) {
      this.policy = policy;
      this.key = key;
      this.siblingKeys = key.siblings();
    }
  }

  private static final class LogEntry {
    final long[] words = new long[1]; // the lock word
    final SlidingLogState log = new SlidingLogState();
  }

  /** Fails fast on a bad value; see {@link MemoryRateLimiter}'s javadoc for each setting. */
  public static final class Builder {
    private final Policy policy;
    private Ticker ticker = Ticker.system();
    private int maxKeys = DEFAULT_MAX_KEYS;
    private int maxKeyLength = DEFAULT_MAX_KEY_LENGTH;
    private RateLimitListener listener = RateLimitListener.NONE;
    private boolean includeKeys;
    private Ticket.Issuer issuer;

    private Builder(Policy policy) {
      this.policy = Checks.notNull("policy", policy);
    }

    /**
     * Issue and accept tickets with {@code issuer} instead of the limiter's own (a service that
     * re-creates tickets it signed does); default: the limiter's own.
     */
    public Builder issuer(Ticket.Issuer issuer) {
      this.issuer = Checks.notNull("issuer", issuer);
      return this;
    }

    /** Most keys tracked at once, over all policies (default 10,000). */
    public Builder maxKeys(int maxKeys) {
      this.maxKeys = (int) Checks.positive("maxKeys", maxKeys);
      return this;
    }

    /** Longest accepted key in UTF-16 code units (default 512). */
    public Builder maxKeyLength(int maxKeyLength) {
      this.maxKeyLength = (int) Checks.positive("maxKeyLength", maxKeyLength);
      return this;
    }

    /** The clock (default {@link Ticker#system()}, monotonic). */
    public Builder ticker(Ticker ticker) {
      this.ticker = Checks.notNull("ticker", ticker);
      return this;
    }

    /** A listener told about every decision and refund; keys are passed only if {@code includeKeys}. */
    public Builder listener(RateLimitListener listener, boolean includeKeys) {
      this.listener = Checks.notNull("listener", listener);
      this.includeKeys = includeKeys;
      return this;
    }

    public MemoryRateLimiter build() {
      return new MemoryRateLimiter(this);
    }
  }
}
