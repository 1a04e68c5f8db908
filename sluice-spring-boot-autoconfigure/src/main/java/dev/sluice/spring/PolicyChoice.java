package dev.sluice.spring;

import dev.sluice.Policy;
import dev.sluice.PolicyResolver;
import dev.sluice.RateLimiter;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A policy chosen per request or call by a SpEL expression answering a name of
 * {@code sluice.policies} ({@code sluice.http.rules[].policy-expression},
 * {@code @RateLimited(policyExpression)}), through the core's {@link PolicyResolver} cached by the
 * answer. Every plan is a configured policy, validated at start like any other; the rule's or
 * annotation's {@code policy} decides what the expression does not: an expression that throws,
 * answers null or blank, names no configured policy, or names one that cannot grant the permits a
 * request costs. Never unlimited; the first request of each of these kinds is logged.
 */
final class PolicyChoice {
  private static final System.Logger LOG = System.getLogger(PolicyChoice.class.getName());
  private final RateLimiterRegistry registry;
  private final RateLimiter fallback;
  /** The resolver of the policies in force, rebuilt after a reload of sluice.policies. */
  private volatile Resolver resolver;
  private final String where;
  /** The kinds of unresolved answers logged so far (each once). */
  private final Set<String> warned = ConcurrentHashMap.newKeySet();

  /**
   * The choice of {@code where} (e.g. {@code sluice.http.rules[0].policy-expression 'x'}), decided by
   * {@code fallback} when the expression gives no configured policy.
   */
  PolicyChoice(String where, RateLimiter fallback, RateLimiterRegistry registry) {
    this.where = where;
    this.registry = registry;
    this.fallback = fallback;
    this.resolver = resolver();
  }

  /** A resolver and the registry's generation it was built at. */
  private record Resolver(long generation, PolicyResolver<String> policies) {}

  private Resolver resolver() {
    long generation = registry.generation();
    return new Resolver(generation, PolicyResolver.<String>builder(name -> {
          RateLimiter l = registry.limiters().get(name);
          return l == null ? null : registry.current(l);
        }, registry.current(fallback))
        .cacheBy(name -> name)
        .maxEntries(Math.max(1, registry.limiters().size()))
        .build());
  }

  /** The resolver of the policies in force (a reload of sluice.policies forgets every cached answer). */
  private PolicyResolver<String> policies() {
    Resolver r = resolver;
    if (r.generation() != registry.generation()) {
      r = resolver();
      resolver = r;
    }
    return r.policies();
  }

  /** The policy's limiter when the expression answered {@code answer} (null: it failed) for a request costing {@code permits}. */
  RateLimiter limiter(Object answer, long permits) {
    String name = answer == null ? null : answer.toString().strip();
    if (name == null || name.isEmpty()) {
      return unresolved("none", "answered " + (answer == null ? "null" : "'" + answer + "'"));
    }
    PolicyResolver<String> policies = policies();
    Policy p = policies.resolve(name);
    if (p == policies.whenUnresolved() && !name.equals(p.name())) {
      return unresolved("unknown", "answered '" + name + "', which names no policy of sluice.policies " + registry.limiters().keySet());
    }
    RateLimiter l = registry.limiter(p.name());
    if (permits > p.limit()) {
      return unresolved("permits", "answered '" + name + "', whose limit " + p.limit() + " is below the " + permits + " permits a request costs");
    }
    return l;
  }

  /** The fallback's limiter after the expression failed with {@code e}. */
  RateLimiter failed(RuntimeException e) {
    return unresolved("failed", "failed (" + e + ")");
  }

  private RateLimiter unresolved(String kind, String why) {
    if (warned.add(kind)) {
      LOG.log(System.Logger.Level.WARNING, where + " " + why + "; such requests are decided by policy '"
          + fallback.policy().name() + "' (logged once for each kind of answer)");
    }
    return fallback;
  }

}
