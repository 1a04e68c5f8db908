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
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.env.Environment;

/**
 * The application's limiters, one per policy of {@code sluice.policies}, by policy name. Each is a
 * plain Sluice {@link RateLimiter} of the configured store (a {@code MemoryRateLimiter},
 * {@code RedisRateLimiter} or {@code JdbcRateLimiter}), also a bean of its own:
 * {@code @Qualifier("login") RateLimiter login}. Counts every limiter's decisions per policy for the
 * {@code ratelimits} Actuator endpoint. The limiters are the kernel's {@link PolicyTable} over the
 * store, which closes them.
 */
public final class RateLimiterRegistry implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(RateLimiterRegistry.class.getName());
  private final String store;
  private final PolicyTable<Counts> table;
  /** Where {@link #reload} reads {@code sluice.policies}; null: no reload. */
  private final Environment environment;
  private volatile Map<String, RateLimiter> limiters;
  /** Bumped by every {@link #reload}: what cached a policy's numbers reads them again. */
  private volatile long generation;
  /** The events the actuator's ratelimitevents endpoint shows (none kept when the buffer size is 0). */
  private final RateLimitEvents events;

  /**
   * One limiter per policy of {@code store}, each reporting to this registry's counts, then to
   * {@code next}; {@code name} is the store's name as the endpoint and the health report it.
   */
  RateLimiterRegistry(String name, Store store, List<Policy> policies, RateLimitListener next) {
    this(name, store, policies, next, new RateLimitEvents(0, RateLimitListener.NONE, java.time.Clock.systemUTC()), null);
  }

  /**
   * As above; {@code events} is the buffer in {@code next}'s chain the events endpoint reads, and
   * {@link #reload} reads {@code sluice.policies} from {@code environment} again.
   */
  RateLimiterRegistry(String name, Store store, List<Policy> policies, RateLimitListener next, RateLimitEvents events,
                      Environment environment) {
    this.events = events;
    this.store = name;
    this.environment = environment;
    this.table = new PolicyTable<>(store, policies, p -> new Counts(next), c -> c);
    this.limiters = limitersOf(table);
  }

  private static Map<String, RateLimiter> limitersOf(PolicyTable<Counts> table) {
    Map<String, RateLimiter> m = new LinkedHashMap<>();
    table.entries().forEach((policy, e) -> m.put(policy, e.limiter()));
    return Collections.unmodifiableMap(m);
  }

  /**
   * Reads {@code sluice.policies} from the application's {@code Environment} again (after a property
   * source changed: Spring Cloud's refresh calls it, see {@code docs/spring-boot.md}) and puts the
   * policies in force through the kernel's {@link PolicyTable#reload}, keeping every count: a
   * policy whose numbers changed decides each key's next request with them; a new one gets a
   * limiter (no bean of its own). The whole list is checked first, by the rules of the start: a bad
   * entry, or a list without a policy in force (rules, annotations and beans name them), changes
   * nothing and is an {@code IllegalArgumentException} naming the entry and the rule. Answers what
   * changed ({@code changed: api; added: none; removed: none}).
   */
  public synchronized String reload() {
    if (environment == null) {
      throw new IllegalStateException("this registry was built without the application's Environment; nothing to reload from");
    }
    List<PolicyEntry> entries = Binder.get(environment)
        .bind("sluice.policies", Bindable.listOf(PolicyEntry.class)).orElse(List.of());
    List<Policy> policies = SluiceAutoConfiguration.policies(entries, environment);
    for (String name : limiters.keySet()) {
      if (policies.stream().noneMatch(p -> p.name().equals(name))) {
        throw new IllegalArgumentException("sluice.policies: the reloaded list has no policy '" + name + "', which is in force"
            + " (rules, @RateLimited and limiter beans name it); keep it, or restart to remove it. Nothing changed");
      }
    }
    PolicyTable.Change change = table.reload(policies);
    limiters = limitersOf(table);
    generation++;
    LOG.log(System.Logger.Level.INFO, "sluice.policies reloaded, counts kept: " + change);
    return change.toString();
  }

  /** The numbers in force of the policy {@code limiter} decides (its own until a {@link #reload} changed them). */
  Policy current(RateLimiter limiter) {
    PolicyTable.Entry<Counts> e = table.entry(limiter.policy().name());
    return e == null ? limiter.policy() : e.policy();
  }

  /** Bumped by every reload. */
  long generation() {
    return generation;
  }

  /**
   * The policy {@code name} as it is in force now: its numbers after the last {@link #reload}. A
   * limiter bean decides with the numbers it was built with unless given these per call
   * ({@code limiter.tryAcquire(key, 1, registry.policy("api"))}); the rules and
   * {@code @RateLimited} always use these.
   */
  public Policy policy(String name) {
    return current(limiter(name));
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
