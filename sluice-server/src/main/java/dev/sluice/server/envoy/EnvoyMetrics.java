package dev.sluice.server.envoy;

import dev.sluice.Decision;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.concurrent.ConcurrentHashMap;

/**
 * envoyproxy/ratelimit's per-descriptor statistics, as Prometheus counters tagged {@code domain} and
 * {@code descriptor} (the stat key without the domain, e.g. {@code message_type_marketing.to_number}):
 * {@code ratelimit_service_rate_limit_total_hits_total}, {@code ..._over_limit_total},
 * {@code ..._near_limit_total}, {@code ..._within_limit_total} and {@code ..._shadow_mode_total}.
 * Each counts hits (the {@code hits_addend}), not calls, as there.
 *
 * <p>Near limit is that service's rule: an allowed hit that leaves more than {@link #NEAR_LIMIT_RATIO}
 * of the limit used. Stat keys carrying request values ({@code detailed_metric}, {@code value_to_metric})
 * are bounded: past {@link #MAX_STAT_KEYS} distinct keys, new ones are counted under
 * {@code descriptor="_other"}, so callers cannot grow the registry without end.
 */
final class EnvoyMetrics {
  static final double NEAR_LIMIT_RATIO = 0.8;
  static final int MAX_STAT_KEYS = 10_000;

  private final MeterRegistry registry;
  private final ConcurrentHashMap<String, Meters> meters = new ConcurrentHashMap<>();

  EnvoyMetrics(MeterRegistry registry) {
    this.registry = registry;
  }

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

  /** The meters of {@code statKey} ({@code domain.descriptor...}). */
  Meters meters(String domain, String statKey) {
    Meters m = meters.get(statKey);
    if (m != null) {
      return m;
    }
    String descriptor = statKey.length() > domain.length() ? statKey.substring(domain.length() + 1) : statKey;
    if (meters.size() >= MAX_STAT_KEYS) {
      return meters.computeIfAbsent(domain + "._other", k -> new Meters(domain, "_other"));
    }
    return meters.computeIfAbsent(statKey, k -> new Meters(domain, descriptor));
  }

  /** envoyproxy/ratelimit's near limit: allowed, and more than 80 % of the limit used after it. */
  static boolean nearLimit(Decision d) {
    return d != null && d.allowed() && d.limit() - d.remaining() > Math.floor(d.limit() * NEAR_LIMIT_RATIO);
  }
}
