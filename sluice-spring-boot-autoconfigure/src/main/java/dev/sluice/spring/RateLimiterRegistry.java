package dev.sluice.spring;

import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Refund;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BiFunction;

/**
 * The application's limiters, one per policy of {@code sluice.policies}, by policy name. Each is a
 * plain Sluice {@link RateLimiter} of the configured store (a {@code MemoryRateLimiter},
 * {@code RedisRateLimiter} or {@code JdbcRateLimiter}), also a bean of its own:
 * {@code @Qualifier("login") RateLimiter login}. Counts every limiter's decisions per policy for the
 * {@code ratelimits} Actuator endpoint.
 */
public final class RateLimiterRegistry implements AutoCloseable {
  private final String store;
  private final Map<String, RateLimiter> limiters;
  private final Map<String, Counts> counts = new ConcurrentHashMap<>();

  /**
   * Builds one limiter per policy with {@code factory}, which is handed the policy and the listener
   * the limiter must report to (this registry's counts, then {@code next}).
   */
  RateLimiterRegistry(String store, List<Policy> policies, RateLimitListener next,
      BiFunction<Policy, RateLimitListener, RateLimiter> factory) {
    this.store = store;
    Map<String, RateLimiter> m = new LinkedHashMap<>();
    for (Policy p : policies) {
      Counts c = new Counts(next);
      counts.put(p.name(), c);
      m.put(p.name(), factory.apply(p, c));
    }
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

  /** Decisions made under policy {@code name} so far: allowed, refused, and refusals the store failed to decide. */
  public Map<String, Long> counts(String name) {
    Counts c = counts.get(name);
    if (c == null) {
      limiter(name);
    }
    Map<String, Long> m = new LinkedHashMap<>();
    m.put("allowed", c.allowed.sum());
    m.put("refused", c.refused.sum());
    m.put("failed", c.failed.sum());
    return m;
  }

  @Override public void close() {
    for (RateLimiter l : limiters.values()) {
      if (l instanceof AutoCloseable c) {
        try {
          c.close();
        } catch (Exception e) {
          System.getLogger(RateLimiterRegistry.class.getName()).log(System.Logger.Level.WARNING,
              "closing the limiter of policy '" + l.policy().name() + "' failed", e);
        }
      }
    }
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
      (decision.allowed() ? allowed : refused).increment();
      if (decision.reason().isFailure()) {
        failed.increment();
      }
      next.onDecision(decision, key);
    }

    @Override public void onRefusal(Decision decision, String key) {
      next.onRefusal(decision, key);
    }

    @Override public void onRefund(Policy policy, Refund result) {
      next.onRefund(policy, result);
    }

    @Override public void onStoreCall(Policy policy, long latencyNanos, Throwable error) {
      next.onStoreCall(policy, latencyNanos, error);
    }
  }
}
