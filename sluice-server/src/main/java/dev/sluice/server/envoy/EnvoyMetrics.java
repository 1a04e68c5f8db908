package dev.sluice.server.envoy;

import dev.sluice.Decision;
import dev.sluice.kernel.BoundedValues;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * envoyproxy/ratelimit's per-descriptor statistics, as Prometheus counters tagged {@code domain} and
 * {@code descriptor} (the stat key without the domain, e.g. {@code message_type_marketing.to_number}):
 * {@code ratelimit_service_rate_limit_total_hits_total}, {@code ..._over_limit_total},
 * {@code ..._near_limit_total}, {@code ..._within_limit_total} and {@code ..._shadow_mode_total}.
 * Each counts hits (the {@code hits_addend}), not calls, as there.
 *
 * <p>Near limit is that service's rule: an allowed hit that leaves more than {@link #NEAR_LIMIT_RATIO}
 * of the limit used. Stat keys of the configuration are as many as its rules; those that carry request
 * values ({@code detailed_metric}, {@code value_to_metric}, a descriptor's own {@code limit}) are
 * capped: past {@link #MAX_VALUE_STAT_KEYS} distinct ones, new ones are counted under
 * {@code descriptor="_other"} (and {@code domain="_other"} for a domain the configuration does not
 * have), so callers cannot grow the registry, and {@code /metrics}, without end. 10,000 distinct
 * {@code detailed_metric} values made {@code /metrics} 4.7 MB when the cap was 10,000 keys of any kind.
 */
final class EnvoyMetrics {
  static final double NEAR_LIMIT_RATIO = 0.8;
  /** Most stat keys that carry request values: 5 counters each, 5,000 series at most. */
  static final int MAX_VALUE_STAT_KEYS = 1_000;
  static final String OTHER = BoundedValues.OTHER;

  private final MeterRegistry registry;
  private volatile Set<String> domains;
  private final ConcurrentHashMap<StatKey, Meters> meters = new ConcurrentHashMap<>();
  /** The stat keys that carry request values and have meters of their own: the kernel's cap. */
  private final BoundedValues valueStatKeys = new BoundedValues(MAX_VALUE_STAT_KEYS);

  /** {@code domains}: the configured ones, whose name a capped stat key keeps. */
  EnvoyMetrics(MeterRegistry registry, Set<String> domains) {
    this.registry = registry;
    this.domains = Set.copyOf(domains);
  }

  /** After a reload: the configured domains, whose name a capped stat key keeps. */
  void domains(Set<String> configured) {
    domains = Set.copyOf(configured);
  }

  /** Two domains' stat keys can be one string ({@code a} + {@code b_c.b}, {@code a.b_c} + {@code b}): the domain is part of the identity. */
  private record StatKey(String domain, String statKey) {}

  /** One stat key's five counters. */
  final class Meters {
    private final Counter totalHits;
    private final Counter overLimit;
    private final Counter nearLimit;
    private final Counter withinLimit;
    private final Counter shadowMode;

    Meters(String domain, String descriptor) {
      totalHits = counter("total_hits", "Hits of the descriptor's rule", domain, descriptor);
      overLimit = counter("over_limit", "Hits over the limit (shadow mode included)", domain, descriptor);
      nearLimit = counter("near_limit", "Hits within the limit past the near-limit ratio (0.8)", domain, descriptor);
      withinLimit = counter("within_limit", "Hits within the limit", domain, descriptor);
      shadowMode = counter("shadow_mode", "Hits over the limit that shadow mode let through", domain, descriptor);
    }

    void totalHits(long hits) { totalHits.increment(hits); }

    void overLimit(long hits) { overLimit.increment(hits); }

    void nearLimit(long hits) { nearLimit.increment(hits); }

    void withinLimit(long hits) { withinLimit.increment(hits); }

    void shadowMode(long hits) { shadowMode.increment(hits); }
  }

  private Counter counter(String stat, String description, String domain, String descriptor) {
    return Counter.builder("ratelimit.service.rate_limit." + stat).description(description)
        .tag("domain", domain).tag("descriptor", descriptor).register(registry);
  }

  /**
   * The meters of {@code statKey} ({@code domain.descriptor...}); {@code carriesValues} when it holds a
   * request's values, which are capped.
   */
  Meters meters(String domain, String statKey, boolean carriesValues) {
    StatKey k = new StatKey(domain, statKey);
    Meters m = meters.get(k);
    if (m != null) {
      return m;
    }
    String descriptor = statKey.length() > domain.length() ? statKey.substring(domain.length() + 1) : statKey;
    if (!carriesValues) {
      return meters.computeIfAbsent(k, x -> new Meters(domain, descriptor));
    }
    m = meters.computeIfAbsent(k, x -> valueStatKeys.admits(x) ? new Meters(domain, descriptor) : null);
    if (m != null) {
      return m;
    }
    String shown = domains.contains(domain) ? domain : OTHER;
    return meters.computeIfAbsent(new StatKey(shown, OTHER), x -> new Meters(shown, OTHER));
  }

  /** envoyproxy/ratelimit's near limit: allowed, and more than 80 % of the limit used after it. */
  static boolean nearLimit(Decision d) {
    return d != null && d.allowed() && d.limit() - d.remaining() > Math.floor(d.limit() * NEAR_LIMIT_RATIO);
  }
}
