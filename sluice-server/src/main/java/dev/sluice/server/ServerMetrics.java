package dev.sluice.server;

import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.Refund;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The service's meters in a Prometheus registry, scraped at {@code GET /metrics}. Every meter is
 * registered up front, per policy, so a decision costs a counter increment and no lookup.
 *
 * <ul>
 *   <li>{@code sluice_decisions_total{policy, outcome=allowed|refused|failed}}: failed counts decisions a
 *       failure mode made because the store was unavailable.
 *   <li>{@code sluice_refunds_total{policy, result=applied|no_effect|failed}}
 *   <li>{@code sluice_server_requests_seconds{endpoint}}: request latency, with percentiles histogram off.
 * </ul>
 */
final class ServerMetrics {
  private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);

  /** Per-policy meters. */
  final class PolicyMeters {
    private final Counter allowed;
    private final Counter refused;
    private final Counter failed;
    private final Map<Refund, Counter> refunds = new EnumMap<>(Refund.class);

    PolicyMeters(Policy p) {
      allowed = decisions(p, "allowed");
      refused = decisions(p, "refused");
      failed = decisions(p, "failed");
      for (Refund r : Refund.values()) {
        refunds.put(r, Counter.builder("sluice.refunds").description("Refunds by policy and result")
            .tag("policy", p.name()).tag("result", r.name().toLowerCase(java.util.Locale.ROOT)).register(registry));
      }
    }

    void decision(Decision d) {
      (d.reason().isFailure() ? failed : d.allowed() ? allowed : refused).increment();
    }

    void refund(Refund r) {
      refunds.get(r).increment();
    }

    private Counter decisions(Policy p, String outcome) {
      return Counter.builder("sluice.decisions").description("Rate-limit decisions by policy and outcome")
          .tag("policy", p.name()).tag("outcome", outcome).register(registry);
    }
  }

  PolicyMeters forPolicy(Policy p) {
    return new PolicyMeters(p);
  }

  Timer requestTimer(String endpoint) {
    return Timer.builder("sluice.server.requests").description("HTTP API request latency by endpoint")
        .tag("endpoint", endpoint).register(registry);
  }

  void recordNanos(Timer t, long nanos) {
    t.record(nanos, TimeUnit.NANOSECONDS);
  }

  String scrape() {
    return registry.scrape();
  }
}
