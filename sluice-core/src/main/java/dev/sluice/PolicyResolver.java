package dev.sluice;

import dev.sluice.internal.Checks;
import java.util.Iterator;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * Chooses the policy of each request from its context (a tenant, a plan, an attribute the caller
 * supplies), with a bounded cache of what it resolved that the caller can invalidate. Pass its
 * answer as the call's policy ({@code limiter.tryAcquire(key, permits, resolver.resolve(ctx))}) or
 * give it to a front end ({@code HttpRateLimit.Builder.policy(PolicyResolver)}): a budget is its
 * policy's name and its key, so plans that share a name share the count, and a tenant moved to
 * another plan keeps it ({@code docs/tenants.md}).
 *
 * <p><b>Never unlimited by accident.</b> A resolver that throws or answers null does not decide the
 * request: the {@linkplain Builder#whenUnresolved policy given for that} does (choose the strictest
 * plan, or a policy of the same name as the others so the count carries on), and {@link #failures()}
 * counts it. What failed is not cached: the next request asks the function again.
 *
 * <p><b>The cache.</b> With {@link Builder#cacheBy} the answer for a cache key (a tenant id, a plan
 * name) is kept until {@link #invalidate} or {@link #invalidateAll}, at most {@link Builder#maxEntries}
 * of them (an arbitrary one goes when a new one needs room). The function runs on the caller's
 * thread, at most once per cache key at a time; keep it cheap or load what it reads beforehand.
 * Thread-safe.
 *
 * @param <C> the request's context
 */
public final class PolicyResolver<C> {
  /** Cached answers unless {@link Builder#maxEntries} says otherwise. */
  public static final int DEFAULT_MAX_ENTRIES = 10_000;

  private final Function<? super C, Policy> resolve;
  private final Function<? super C, ?> cacheKey;
  private final int maxEntries;
  private final Policy unresolved;
  private final ConcurrentHashMap<Object, Policy> cache;
  private final AtomicLong failures = new AtomicLong();

  private PolicyResolver(Builder<C> b) {
    this.resolve = b.resolve;
    this.cacheKey = b.cacheKey;
    this.maxEntries = b.maxEntries;
    this.unresolved = b.unresolved;
    this.cache = cacheKey == null ? null : new ConcurrentHashMap<>();
  }

  /**
   * A resolver answering {@code resolve.apply(context)}; {@code whenUnresolved} decides a request
   * for which it throws or answers null.
   */
  public static <C> Builder<C> builder(Function<? super C, Policy> resolve, Policy whenUnresolved) {
    return new Builder<>(Checks.notNull("resolve", resolve), Checks.notNull("whenUnresolved", whenUnresolved));
  }

  /** The policy of the request whose context is {@code context}: never null, never a throw. */
  public Policy resolve(C context) {
    if (cache == null) {
      return orUnresolved(ask(context));
    }
    Object k;
    try {
      k = cacheKey.apply(context);
    } catch (RuntimeException e) {
      return orUnresolved(null);
    }
    if (k == null) {
      return orUnresolved(ask(context)); // nothing to cache it under: asked every time
    }
    Policy p = cache.get(k);
    if (p != null) {
      return p;
    }
    p = ask(context);
    if (p == null) {
      return orUnresolved(null); // a failure is not cached: the next request asks again
    }
    room();
    Policy raced = cache.putIfAbsent(k, p);
    return raced != null ? raced : p;
  }

  /** The function's answer, or null when it threw or answered null. */
  private Policy ask(C context) {
    try {
      return resolve.apply(context);
    } catch (RuntimeException e) {
      return null;
    }
  }

  private Policy orUnresolved(Policy p) {
    if (p != null) {
      return p;
    }
    failures.incrementAndGet();
    return unresolved;
  }

  private void room() {
    if (cache.size() >= maxEntries) {
      Iterator<Object> it = cache.keySet().iterator();
      while (cache.size() >= maxEntries && it.hasNext()) {
        it.next();
        it.remove();
      }
    }
  }

  /** Forgets the answer cached for {@code cacheKey}: the next request under it asks the function again. */
  public void invalidate(Object cacheKey) {
    if (cache != null && cacheKey != null) {
      cache.remove(cacheKey);
    }
  }

  /** Forgets every cached answer. */
  public void invalidateAll() {
    if (cache != null) {
      cache.clear();
    }
  }

  /** Answers cached now. */
  public int cached() {
    return cache == null ? 0 : cache.size();
  }

  /** Requests the function did not resolve (it threw or answered null), decided by the unresolved policy. */
  public long failures() {
    return failures.get();
  }

  /** The policy that decides a request the function did not resolve. */
  public Policy whenUnresolved() {
    return unresolved;
  }

  /** Builds a {@link PolicyResolver}. */
  public static final class Builder<C> {
    private final Function<? super C, Policy> resolve;
    private final Policy unresolved;
    private Function<? super C, ?> cacheKey;
    private int maxEntries = DEFAULT_MAX_ENTRIES;

    private Builder(Function<? super C, Policy> resolve, Policy unresolved) {
      this.resolve = resolve;
      this.unresolved = unresolved;
    }

    /** Caches answers under {@code cacheKey.apply(context)} (a tenant id, a plan name); a null key is not cached. */
    public Builder<C> cacheBy(Function<? super C, ?> cacheKey) {
      this.cacheKey = Checks.notNull("cacheKey", cacheKey);
      return this;
    }

    /** Most answers cached at once (default {@value #DEFAULT_MAX_ENTRIES}); at least 1. */
    public Builder<C> maxEntries(int maxEntries) {
      if (maxEntries < 1) {
        throw new IllegalArgumentException("maxEntries " + maxEntries + " is below 1; a cache holds at least one answer");
      }
      this.maxEntries = maxEntries;
      return this;
    }

    public PolicyResolver<C> build() {
      return new PolicyResolver<>(this);
    }
  }
}
