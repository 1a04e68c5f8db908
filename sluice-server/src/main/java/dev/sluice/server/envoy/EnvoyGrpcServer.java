package dev.sluice.server.envoy;

import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.http.RateLimitHeaders;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.Server;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Envoy's rate-limit service on its own gRPC port ({@code sluice serve --grpc-port}): the
 * {@code RateLimitService}, the gRPC health service ({@code grpc.health.v1.Health}, SERVING for
 * {@code ""} and the rate-limit service's name while running) and server reflection, on one port.
 */
public final class EnvoyGrpcServer implements AutoCloseable {
  private final Server server;
  private final EnvoyRateLimitService service;
  private final HealthStatusManager health = new HealthStatusManager();
  private final Duration stopTimeout;

  /**
   * {@code limiter} decides for every rule (each call names the rule's policy); its meters go to
   * {@code registry}; {@code headers} null sends no {@code response_headers_to_add}.
   */
  public EnvoyGrpcServer(EnvoyConfig config, RateLimiter limiter, MeterRegistry registry, RateLimitHeaders headers,
                         String host, int port, Duration stopTimeout) {
    this(config, limiter, registry, headers, host, port, stopTimeout, Ticker.system());
  }

  /** As above, reading "now" (for durations and headers) from {@code ticker}: the limiter's own in tests. */
  EnvoyGrpcServer(EnvoyConfig config, RateLimiter limiter, MeterRegistry registry, RateLimitHeaders headers,
                  String host, int port, Duration stopTimeout, Ticker ticker) {
    this.stopTimeout = stopTimeout;
    service = new EnvoyRateLimitService(config, limiter, new EnvoyMetrics(registry, config.domains()), headers, ticker);
    server = NettyServerBuilder.forAddress(new InetSocketAddress(host, port))
        .addService(service.definition())
        .addService(health.getHealthService())
        .addService(ProtoReflectionServiceV1.newInstance())
        .build();
  }

  /**
   * Puts {@code next} in force for the calls that start from now on, keeping every budget: a rule is
   * a budget named by its stat key, so one that stays keeps its counts and its new numbers apply at
   * its next hit; a removed rule is decided no more, a new one starts empty. Returns a line saying
   * what changed. The caller has checked {@code next} against the store.
   */
  public String reload(EnvoyConfig next) {
    java.util.Map<String, dev.sluice.Policy> before = new java.util.HashMap<>();
    service.config().policies().forEach(p -> before.put(p.name(), p));
    int kept = 0;
    int changed = 0;
    int added = 0;
    for (dev.sluice.Policy p : next.policies()) {
      dev.sluice.Policy old = before.remove(p.name());
      if (old == null) {
        added++;
      } else if (old.equals(p)) {
        kept++;
      } else {
        changed++;
      }
    }
    service.reload(next);
    return next.policies().size() + " rules in domains " + String.join(", ", new java.util.TreeSet<>(next.domains()))
        + " (" + kept + " unchanged, " + changed + " changed, " + added + " added, " + before.size() + " removed; counts kept)";
  }

  /** Starts listening; then {@link #port()} is the bound port. */
  public EnvoyGrpcServer start() throws IOException {
    server.start();
    health.setStatus("", ServingStatus.SERVING);
    health.setStatus(RateLimitServiceGrpc.SERVICE_NAME, ServingStatus.SERVING);
    return this;
  }

  public int port() {
    return server.getPort();
  }

  /** Reports NOT_SERVING, lets calls in flight finish (up to the stop timeout), then stops. */
  public void stop() throws InterruptedException {
    health.enterTerminalState();
    server.shutdown();
    if (!server.awaitTermination(stopTimeout.toMillis(), TimeUnit.MILLISECONDS)) {
      server.shutdownNow();
      server.awaitTermination(1, TimeUnit.SECONDS);
    }
  }

  @Override public void close() {
    try {
      stop();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
