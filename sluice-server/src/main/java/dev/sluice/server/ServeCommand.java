package dev.sluice.server;

import dev.sluice.Policy;
import dev.sluice.Ticker;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(name = "serve", mixinStandardHelpOptions = true,
    description = {"Runs the rate-limit service: a JSON HTTP API over the policies of a YAML file.",
        "Store: the embedded memory store by default (per process), or --redis / --postgres to share limits between instances."})
final class ServeCommand implements Callable<Integer> {
  private static volatile boolean serving;

  @Option(names = {"-c", "--config"}, required = true, paramLabel = "FILE", description = "Policy file (YAML), e.g. examples/policies.yaml.")
  Path config;

  @Option(names = {"-p", "--port"}, defaultValue = "8080", paramLabel = "PORT", description = "Port to listen on; 0 picks a free port. Default: ${DEFAULT-VALUE}.")
  int port;

  @Option(names = "--host", defaultValue = "127.0.0.1", paramLabel = "ADDRESS",
      description = "Address to bind; 0.0.0.0 for every interface (e.g. in a container). Default: ${DEFAULT-VALUE}.")
  String host;

  @Option(names = "--redis", paramLabel = "URL", description = "Keep counts in Redis, e.g. redis://127.0.0.1:6379.")
  String redis;

  @Option(names = "--postgres", paramLabel = "URL",
      description = "Keep counts in PostgreSQL, e.g. jdbc:postgresql://127.0.0.1:5432/sluice?user=sluice.")
  String postgres;

  @Option(names = "--max-keys", defaultValue = "10000", paramLabel = "N",
      description = "Memory store: most keys tracked per policy; a spray of new keys beyond it is refused, never evicting anyone. Default: ${DEFAULT-VALUE}.")
  int maxKeys;

  @Option(names = "--shutdown-timeout", defaultValue = "10s", paramLabel = "DURATION",
      description = "On SIGTERM, how long requests in flight may take to finish. Default: ${DEFAULT-VALUE}.")
  String shutdownTimeout;

  @Option(names = "--spent-tickets", defaultValue = "100000", paramLabel = "N",
      description = "Most recently refunded tickets remembered (a ticket refunds once). Default: ${DEFAULT-VALUE}.")
  int spentTickets;

  static boolean keepsRunning() {
    return serving;
  }

  @Override public Integer call() throws Exception {
    PrintStream out = System.out;
    if (redis != null && postgres != null) {
      throw new IllegalArgumentException("--redis and --postgres both given; choose one store");
    }
    Duration stopTimeout = Durations.parse("--shutdown-timeout", shutdownTimeout);
    if (port < 0 || port > 65_535) {
      throw new IllegalArgumentException("--port " + port + " is out of range; use 0 (a free port) to 65535");
    }
    List<Policy> policies = PolicyFile.read(config);
    Store store = redis != null ? Store.redis(redis) : postgres != null ? Store.postgres(postgres) : Store.memory(maxKeys, Ticker.system());
    SluiceServer server;
    try {
      server = new SluiceServer(policies, store, host, port, stopTimeout, Ticker.system(), spentTickets);
    } catch (RuntimeException e) {
      store.close();
      throw e;
    }
    server.start();
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      out.println("sluice: stopping (draining requests in flight for up to " + shutdownTimeout + ")");
      long t0 = System.nanoTime();
      try {
        server.stop();
        out.println("sluice: stopped after " + (System.nanoTime() - t0) / 1_000_000 + " ms");
      } catch (Exception e) {
        out.println("sluice: stop failed: " + e);
      }
      out.flush();
    }, "sluice-shutdown"));
    serving = true;
    String first = policies.get(0).name();
    out.println("sluice: " + policies.size() + " policies from " + config + " ("
        + policies.stream().map(p -> p.name() + " " + p.algorithm().id()).collect(Collectors.joining(", ")) + ")");
    out.println("sluice: store: " + store.describe());
    out.println("sluice: listening on " + server.uri());
    out.println("sluice: try   curl -si -X POST " + server.uri() + "/v1/acquire -H 'Content-Type: application/json'"
        + " -d '{\"policy\":\"" + first + "\",\"key\":\"alice\"}'");
    out.println("sluice: stop with Ctrl-C or SIGTERM");
    out.flush();
    server.join();
    return 0;
  }
}
