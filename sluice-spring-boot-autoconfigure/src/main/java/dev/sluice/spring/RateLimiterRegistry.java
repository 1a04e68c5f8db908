package dev.sluice.spring;

import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Refund;
import dev.sluice.kernel.PolicyTable;
import dev.sluice.kernel.Store;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * The application's limiters, one per policy of {@code sluice.policies}, by policy name. Each is a
 * plain Sluice {@link RateLimiter} of the configured store (a {@code MemoryRateLimiter},
 * {@code RedisRateLimiter} or {@code JdbcRateLimiter}), also a bean of its own:
 * {@code @Qualifier("login") RateLimiter login}. Counts every limiter's decisions per policy for the
 * {@code ratelimits} Actuator endpoint. The limiters are the kernel's {@link PolicyTable} over the
 * store, which closes them.
 */
public final class RateLimiterRegistry implements AutoCloseable {
  private final String store;
  private final PolicyTable<Counts> table;
  private final Map<String, RateLimiter> limiters;
  /** The events the actuator's ratelimitevents endpoint shows (none kept when the buffer size is 0). */
  private final RateLimitEvents events;

  /**
   * One limiter per policy of {@code store}, each reporting to this registry's counts, then to
   * {@code next}; {@code name} is the store's name as the endpoint and the health report it.
   */
  RateLimiterRegistry(String name, Store store, List<Policy> policies, RateLimitListener next) {
    this(name, store, policies, next, new RateLimitEvents(0, RateLimitListener.NONE, java.time.Clock.systemUTC()));
  }

  /** As above, {@code events} being the buffer in {@code next}'s chain the events endpoint reads. */
  RateLimiterRegistry(String name, Store store, List<Policy> policies, RateLimitListener next, RateLimitEvents events) {
    this.events = events;
    this.store = name;
    this.table = new PolicyTable<>(store, policies, p -> new Counts(next), c -> c);
    Map<String, RateLimiter> m = new LinkedHashMap<>();
    table.entries().forEach((policy, e) -> m.put(policy, e.limiter()));
    this.limiters = Collections.unmodifiableMap(m);
  }

  /** The limiter of policy {@code name}. */
  public RateLimiter limiter(String name) {
    RateLimiter l = limiters.get(name);
    if (l == null) {
      throw new IllegalArgumentException("no policy named " + (name == null ? "null" : "'" + name + "'")
          + " in sluice.policies; the policies are " + limiters.keySet());
    }
    return l;
  }

  /** Every limiter by policy name, in the order of {@code sluice.policies}. */
  public Map<String, RateLimiter> limiters() {
    return limiters;
  }

  /** The store the limiters use: {@code memory}, {@code redis} or {@code jdbc}. */
  public String store() {
    return store;
  }

  /**
   * Decisions made under policy {@code name} so far, in three disjoint counts that add up to them:
   * {@code allowed} and {@code refused} by the store, and {@code failed}, those the store did not make
   * (a timeout, an outage: the failure mode or its fallback answered, allowing or refusing).
   */
  public Map<String, Long> counts(String name) {
    limiter(name);
    Counts c = table.entry(name).attachment();
    Map<String, Long> m = new LinkedHashMap<>();
    m.put("allowed", c.allowed.sum());
    m.put("refused", c.refused.sum());
    m.put("failed", c.failed.sum());
    return m;
  }

  /** Nothing to release: the store bean closes the limiters it built. */
  @Override public void close() {}

  /** The events kept for the events endpoint. */
  RateLimitEvents events() {
    return events;
  }

  /** Counts decisions, then tells the next listener (Micrometer's, when bound). */
  private static final class Counts implements RateLimitListener {
    final LongAdder allowed = new LongAdder();
    final LongAdder refused = new LongAdder();
    final LongAdder failed = new LongAdder();
    private final RateLimitListener next;

    Counts(RateLimitListener next) {
      this.next = next;
    }

    @Override public void onDecision(Decision decision, String key) {
      // Three disjoint counts that add up to the decisions: a decision the store did not make is
      // failed only (it was counted as refused, or allowed under open, as well).
      (decision.reason().isFailure() ? failed : decision.allowed() ? allowed : refused).increment();
      next.onDecision(decision, key);
    }

    @Override public void onRefusal(Decision decision, String key) {
      next.onRefusal(decision, key);
    }

    @Override public void onRefund(Policy policy, Refund result) {
      next.onRefund(policy, result);
    }

    @Override public void onSettle(Policy policy, dev.sluice.Settlement result) {
      next.onSettle(policy, result);
    }

    @Override public void onStoreCall(Policy policy, long latencyNanos, Throwable error) {
      next.onStoreCall(policy, latencyNanos, error);
    }
  }
}
