package dev.sluice.server;

import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.Refund;
import dev.sluice.micrometer.RateLimitMetrics;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.DoubleSupplier;

/**
 * The service's meters in a Prometheus registry, scraped at {@code GET /metrics}: the library's own
 * ({@link RateLimitMetrics} of {@code sluice-micrometer}, told by every limiter) plus the server's.
 *
 * <ul>
 *   <li>{@code sluice_decisions_total{policy, outcome=allowed|refused, reason}}, {@code sluice_decisions_near_limit_total},
 *       {@code sluice_refunds_total}, {@code sluice_store_latency_seconds}, {@code sluice_store_errors_total},
 *       {@code sluice_keys_tracked{limiter}}: from the limiters (see sluice-micrometer).
 *   <li>{@code sluice_server_refunds_total{policy, result=applied|no_effect|failed}}: every refund the API
 *       answered, including tickets it turned away itself (already refunded, expired).
 *   <li>{@code sluice_server_requests_seconds{endpoint}}: request latency of acquire, refund and peek.
 * </ul>
 * Server meters are registered up front, per policy, so a request costs a counter increment and no lookup.
 */
final class ServerMetrics {
  private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final RateLimitMetrics library = RateLimitMetrics.builder().build();

  ServerMetrics() {
    library.bindTo(registry);
  }

  /** The listener every limiter of the service reports to. */
  RateLimitListener listener() {
    return library;
  }

  /** Publishes a memory-tier limiter's tracked keys as {@code sluice_keys_tracked{limiter=policy}}. */
  void trackedKeys(String policy, DoubleSupplier keys) {
    library.trackedKeys(policy, keys);
  }

  /** Per-policy server meters. */
  final class PolicyMeters {
    private final Map<Refund, Counter> refunds = new EnumMap<>(Refund.class);

    PolicyMeters(Policy p) {
      for (Refund r : Refund.values()) {
        refunds.put(r, Counter.builder("sluice.server.refunds").description("Refunds the API answered, by policy and result")
            .tag("policy", p.name()).tag("result", r.name().toLowerCase(Locale.ROOT)).register(registry));
      }
    }

    void refund(Refund r) {
      refunds.get(r).increment();
    }
  }

  PolicyMeters forPolicy(Policy p) {
    return new PolicyMeters(p);
  }

  /** {@code sluice_server_requests_in_flight}: requests being handled now (what a stop drains). */
  void requestsInFlight(java.util.function.LongSupplier count) {
    io.micrometer.core.instrument.Gauge.builder("sluice.server.requests.in.flight", count::getAsLong)
        .description("Requests being handled now").register(registry);
  }

  Timer requestTimer(String endpoint) {
    return Timer.builder("sluice.server.requests").description("HTTP API request latency by endpoint")
        .tag("endpoint", endpoint).register(registry);
  }

  String scrape() {
    return registry.scrape();
  }
}
