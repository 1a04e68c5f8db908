package dev.sluice.compose;

import dev.sluice.ClockedRateLimiter;
import dev.sluice.Decision;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.internal.Checks;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * A bounded near-cache of refusals in front of a (shared-store) limiter, as Envoy's ratelimit and
 * Upstash keep one: a key the store refused until {@code t} is refused locally until {@code t},
 * without a round trip. A flood against a locked key then costs this process nothing but a map read.
 *
 * <ul>
 *   <li>Only {@link Reason#LIMIT_EXCEEDED} refusals decided by the store itself
 *       ({@link Path#PRIMARY}) are cached, until {@code now + retryAfter} on this cache's ticker. A
 *       refusal for {@code n} permits answers later requests for {@code n} or more permits only: a
 *       smaller request might fit.
 *   <li>A cached answer is marked {@link Path#NEAR_CACHE}, with the cached {@code remaining} and
 *       {@code resetAt} and the retry-after still to run.
 *   <li>A {@link #refund(Ticket) refund} or {@link #reset(String, Policy) reset} through this limiter,
 *       or an allowed decision for the key, drops its entry.
 *   <li>Bounded: at most {@code maxEntries} keys (default 10,000). When full, expired entries are
 *       purged; if none expired, the new refusal is simply not cached (one more round trip later,
 *       never a wrong answer). Nothing else is ever evicted early.
 * </ul>
 *
 * <p><b>The trade.</b> A refund or reset made by <i>another</i> process cannot reach this cache, so
 * a key may stay refused here until {@code t} although the store would admit it a little earlier:
 * stricter, never weaker, and never for longer than the store's own retry-after.
 */
public final class NearCachedRateLimiter implements RateLimiter {
  private final RateLimiter delegate;
  private final Ticker ticker;
  private final int maxEntries;
  private final ConcurrentHashMap<Policy, ConcurrentHashMap<String, Entry>> refused = new ConcurrentHashMap<>();
  private final AtomicInteger size = new AtomicInteger();
  private final LongAdder hits = new LongAdder();
  private final LongAdder roundTrips = new LongAdder();
  private final LongAdder notCached = new LongAdder();

  /** A cached refusal. */
  private record Entry(long untilMicros, long permits, long remaining, long resetAtMicros) {}

  private NearCachedRateLimiter(Builder b) {
    this.delegate = b.delegate;
    this.ticker = b.ticker != null ? b.ticker
        : b.delegate instanceof ClockedRateLimiter c ? c.ticker() : Ticker.system();
    this.maxEntries = b.maxEntries;
  }

  public static Builder builder(RateLimiter delegate) {
    return new Builder(Checks.notNull("delegate", delegate));
  }

  @Override public Policy policy() {
    return delegate.policy();
  }

  @Override public Decision tryAcquire(String key, long permits, Policy p) {
    Decision cached = cached(key, permits, p);
    if (cached != null) {
      return cached;
    }
    long now = ticker.nowMicros();
    roundTrips.increment();
    Decision d = delegate.tryAcquire(key, permits, p);
    remember(key, permits, p, d, now);
    return d;
  }

  @Override public CompletionStage<Decision> tryAcquireAsync(String key, long permits, Policy p) {
    Decision cached = cached(key, permits, p);
    if (cached != null) {
      return CompletableFuture.completedFuture(cached);
    }
    long now = ticker.nowMicros();
    roundTrips.increment();
    return delegate.tryAcquireAsync(key, permits, p).thenApply(d -> {
      remember(key, permits, p, d, now);
      return d;
    });
  }

  /** A cached refusal answers a peek too (a peek asks about one permit); anything else goes to the store. */
  @Override public Decision peek(String key, Policy p) {
    Decision cached = cached(key, 1, p);
    if (cached != null) {
      return cached;
    }
    roundTrips.increment();
    return delegate.peek(key, p);
  }

  /** Drops the key's cached refusal (the permits go back, so it may fit again), then refunds through the store. */
  @Override public Refund refund(Ticket ticket) {
    if (ticket != null) {
      invalidate(ticket.policy(), ticket.key());
    }
    roundTrips.increment();
    return delegate.refund(ticket);
  }

  /**
   * Settles through the store, after dropping the key's cached refusal when the settlement gives
   * permits back; an overrun only makes the key stricter, which the store's next answer shows.
   */
  @Override public Settlement settle(Ticket ticket, long actualPermits) {
    if (ticket != null && actualPermits < ticket.permits()) {
      invalidate(ticket.policy(), ticket.key());
    }
    roundTrips.increment();
    return delegate.settle(ticket, actualPermits);
  }

  @Override public void reset(String key, Policy p) {
    Checks.key(key);
    invalidate(Checks.notNull("policy", p), key);
    roundTrips.increment();
    delegate.reset(key, p);
  }

  /** Refusals answered locally, without a round trip. */
  public long hits() {
    return hits.sum();
  }

  /** Calls that went to the store. */
  public long roundTrips() {
    return roundTrips.sum();
  }

  /** Refusals not cached because the cache was full of live entries. */
  public long notCached() {
    return notCached.sum();
  }

  /** Cached refusals right now (live or not yet purged); never above {@code maxEntries}. */
  public int size() {
    return size.get();
  }

  public int maxEntries() {
    return maxEntries;
  }

  private Decision cached(String key, long permits, Policy p) {
    Checks.key(key);
    Checks.notNull("policy", p);
    Checks.permits(permits, p.limit(), p.name());
    Map<String, Entry> m = refused.get(p);
    if (m == null) {
      return null;
    }
    Entry e = m.get(key);
    if (e == null) {
      return null;
    }
    long now = ticker.nowMicros();
    if (now >= e.untilMicros) {
      if (m.remove(key, e)) {
        size.decrementAndGet();
      }
      return null;
    }
    if (permits < e.permits) {
      return null;
    }
    hits.increment();
    return Decision.builder(p).refused(Reason.LIMIT_EXCEEDED).path(Path.NEAR_CACHE)
        .remaining(e.remaining).resetAtMicros(e.resetAtMicros).retryAfterMicros(e.untilMicros - now).build();
  }

  private void remember(String key, long permits, Policy p, Decision d, long now) {
    if (d.allowed()) {
      invalidate(p, key);
      return;
    }
    if (d.reason() != Reason.LIMIT_EXCEEDED || d.path() != Path.PRIMARY) {
      return;
    }
    Entry e = new Entry(now + d.retryAfterMicros(), permits, d.remaining(), d.resetAtMicros());
    ConcurrentHashMap<String, Entry> m = refused.computeIfAbsent(p, x -> new ConcurrentHashMap<>());
    Entry old = m.get(key);
    if (old != null) {
      if (m.replace(key, old, e)) {
        return;
      }
    }
    if (!reserveSlot(now)) {
      notCached.increment();
      return;
    }
    if (m.putIfAbsent(key, e) != null) {
      size.decrementAndGet(); // someone cached it first; theirs is as good
    }
  }

  private boolean reserveSlot(long now) {
    for (int attempt = 0; attempt < 2; attempt++) {
      int n = size.get();
      while (n < maxEntries) {
        if (size.compareAndSet(n, n + 1)) {
          return true;
        }
        n = size.get();
      }
      if (attempt == 0) {
        purge(now);
      }
    }
    return false;
  }

  /** Removes expired entries. Runs only when the cache is full, so its cost is paid by refusals that would otherwise not be cached. */
  private void purge(long now) {
    for (ConcurrentHashMap<String, Entry> m : refused.values()) {
      for (Map.Entry<String, Entry> en : m.entrySet()) {
        if (now >= en.getValue().untilMicros && m.remove(en.getKey(), en.getValue())) {
          size.decrementAndGet();
        }
      }
    }
  }

  private void invalidate(Policy p, String key) {
    Map<String, Entry> m = refused.get(p);
    if (m != null && m.remove(key) != null) {
      size.decrementAndGet();
    }
  }

  @Override public String toString() {
    return "NearCachedRateLimiter[" + delegate + ", entries=" + size.get() + "/" + maxEntries + "]";
  }

  public static final class Builder {
    private final RateLimiter delegate;
    private Ticker ticker;
    private int maxEntries = 10_000;

    private Builder(RateLimiter delegate) {
      this.delegate = delegate;
    }

    /** Most refusals cached at once (default 10,000). */
    public Builder maxEntries(int maxEntries) {
      this.maxEntries = (int) Checks.positive("maxEntries", maxEntries);
      return this;
    }

    /** The clock that times cached refusals (default: the delegate's if clocked, else {@link Ticker#system()}). */
    public Builder ticker(Ticker ticker) {
      this.ticker = Checks.notNull("ticker", ticker);
      return this;
    }

    public NearCachedRateLimiter build() {
      return new NearCachedRateLimiter(this);
    }
  }
}
