package dev.sluice.server;

import dev.sluice.Policy;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.kernel.HeaderFamily;
import dev.sluice.kernel.Store;
import dev.sluice.server.envoy.EnvoyConfig;
import dev.sluice.server.envoy.EnvoyGrpcServer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/** {@code sluice serve}'s Envoy options, checked before anything starts, and the gRPC server they describe. */
record Envoy(Path path, EnvoyConfig config, int port, RateLimitHeaders headers) {
  /** Null when neither option is given. */
  static Envoy of(Path config, Integer port, String headers) {
    if (config == null && port == null) {
      return null;
    }
    if (config == null) {
      throw new IllegalArgumentException("--grpc-port " + port + " given without --envoy-config; name the envoyproxy/ratelimit configuration");
    }
    if (port == null) {
      throw new IllegalArgumentException("--envoy-config " + config + " given without --grpc-port; choose the port of the gRPC API");
    }
    ServeCommand.requirePort("--grpc-port", port);
    return new Envoy(config, EnvoyConfig.read(config), port, headerFamilies(headers));
  }

  /** {@code --envoy-headers}: the header families, null for none; checked even when Envoy's API is off. */
  static RateLimitHeaders headerFamilies(String headers) {
    HeaderFamily f = HeaderFamily.parse("--envoy-headers", headers);
    return f == HeaderFamily.NONE ? null : RateLimitHeaders.of(f.ietf(), f.legacy());
  }

  /** Refuses a policy of {@code --config} named like a rule's policy: a name is a budget, and the two would share one. */
  void refuseSharedNames(List<Policy> policies) {
    refuseSharedNames(config, policies);
  }

  private static void refuseSharedNames(EnvoyConfig config, List<Policy> policies) {
    java.util.Set<String> rules = new java.util.HashSet<>();
    config.policies().forEach(p -> rules.add(p.name()));
    for (Policy p : policies) {
      if (rules.contains(p.name())) {
        throw new IllegalArgumentException("policy '" + p.name() + "' of --config has the name of an --envoy-config rule's budget;"
            + " rename the policy (a name is a budget, and the two APIs would share it)");
      }
    }
  }

  /**
   * Re-reads the configuration from its path and checks it as the start did (its rules against the
   * service's {@code policies} and the {@code store}), changing nothing; a bad one throws
   * {@link IllegalArgumentException} naming file, line and rule. Returns what puts it in force on
   * {@code grpc}, and says what changed.
   */
  java.util.function.Supplier<String> prepareReload(List<Policy> policies, Store store, EnvoyGrpcServer grpc) {
    EnvoyConfig next = EnvoyConfig.read(path);
    refuseSharedNames(next, policies);
    store.check(next.policies());
    return () -> "envoy: " + grpc.reload(next) + " from " + path;
  }

  /** Starts the gRPC API on {@code store}, its meters in the server's registry (one {@code /metrics}). */
  EnvoyGrpcServer start(Store store, SluiceServer server, String host, Duration stopTimeout) throws java.io.IOException {
    List<Policy> rules = config.policies(); // the store checked them before anything started
    // One limiter decides for every rule: each call names its rule's policy (a per-call override).
    Policy first = rules.isEmpty() ? Policy.fixedWindow("envoy", 1, Duration.ofSeconds(1)) : rules.get(0);
    dev.sluice.RateLimiter limiter = store.limiter(first, server.metrics().listener());
    return new EnvoyGrpcServer(config, limiter, server.metrics().registry(), headers, host, port, stopTimeout).start();
  }
}
