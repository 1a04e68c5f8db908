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
    // The JVM and the process beside sluice_*: memory, GC, threads, classes, CPU, uptime, file descriptors.
    new io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics().bindTo(registry);
    new io.micrometer.core.instrument.binder.jvm.JvmGcMetrics().bindTo(registry);
    new io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics().bindTo(registry);
    new io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics().bindTo(registry);
    new io.micrometer.core.instrument.binder.jvm.JvmInfoMetrics().bindTo(registry);
    new io.micrometer.core.instrument.binder.system.ProcessorMetrics().bindTo(registry);
    new io.micrometer.core.instrument.binder.system.UptimeMetrics().bindTo(registry);
    new io.micrometer.core.instrument.binder.system.FileDescriptorMetrics().bindTo(registry);
  }

  /**
   * Jetty's side: {@code jetty_threads_*} of the request thread pool, and
   * {@code http_server_requests_seconds{method, status}} for every request Jetty handed the service
   * (probes and scrapes included; the API's own {@code sluice_server_requests_seconds} has acquires,
   * refunds and peeks by endpoint).
   */
  void jetty(org.eclipse.jetty.util.thread.QueuedThreadPool pool) {
    io.micrometer.core.instrument.Gauge.builder("jetty.threads.current", pool, p -> p.getThreads())
        .description("Threads of Jetty's request pool").register(registry);
    io.micrometer.core.instrument.Gauge.builder("jetty.threads.busy", pool, p -> p.getBusyThreads())
        .description("Busy threads of Jetty's request pool").register(registry);
    io.micrometer.core.instrument.Gauge.builder("jetty.threads.config.max", pool, p -> p.getMaxThreads())
        .description("Most threads of Jetty's request pool").register(registry);
    io.micrometer.core.instrument.Gauge.builder("jetty.threads.jobs", pool, p -> p.getQueueSize())
        .description("Jobs queued for Jetty's request pool").register(registry);
  }

  private final java.util.concurrent.ConcurrentHashMap<String, Timer> httpTimers = new java.util.concurrent.ConcurrentHashMap<>();

  /** Records one request Jetty handled: its method, status and time. */
  void httpRequest(String method, int status, long nanos) {
    String m = switch (method) {
      case "GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH" -> method;
      default -> "other"; // a client-chosen method must not mint a time series per spelling
    };
    httpTimers.computeIfAbsent(m + ' ' + status, k -> Timer.builder("http.server.requests")
        .description("Requests Jetty handled, by method and status").tag("method", m).tag("status", Integer.toString(status))
        .register(registry)).record(nanos, java.util.concurrent.TimeUnit.NANOSECONDS);
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

  /** The registry {@code /metrics} scrapes, for meters of other front ends (the Envoy gRPC API). */
  io.micrometer.core.instrument.MeterRegistry registry() {
    return registry;
  }

  String scrape() {
    return registry.scrape();
  }
}
