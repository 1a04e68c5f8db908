package dev.sluice.server;

import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.Ticker;
import dev.sluice.kernel.FailureModeWords;
import dev.sluice.kernel.PostgresStore;
import dev.sluice.kernel.Store;
import dev.sluice.kernel.StoreFactory;
import dev.sluice.kernel.StoreOptions;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.function.Function;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(name = "serve", mixinStandardHelpOptions = true,
    description = {"Runs the rate-limit service: a JSON HTTP API over the policies of a YAML file.",
        "Store: the embedded memory store by default (per process), or --redis / --postgres to share limits between instances."})
final class ServeCommand implements Callable<Integer> {
  @Option(names = {"-c", "--config"}, required = true, paramLabel = "FILE", description = "Policy file (YAML), e.g. examples/policies.yaml.")
  Path config;

  @Option(names = {"-p", "--port"}, defaultValue = "8080", paramLabel = "PORT", description = "Port to listen on; 0 picks a free port. Default: ${DEFAULT-VALUE}.")
  int port;

  @Option(names = "--host", defaultValue = "127.0.0.1", paramLabel = "ADDRESS",
      description = "Address to bind; 0.0.0.0 for every interface (e.g. in a container). Default: ${DEFAULT-VALUE}.")
  String host;

  @Option(names = "--redis", paramLabel = "URL", description = "Keep counts in Redis, e.g. redis://127.0.0.1:6379.")
  String redis;

  @Option(names = "--redis-client", paramLabel = "CLIENT", defaultValue = "lettuce",
      description = "The Redis client of --redis: lettuce (default, in the service jar), jedis or redisson (their "
          + "sluice-redis-jedis / sluice-redis-redisson artifact on the class path).")
  String redisClient;

  @Option(names = "--postgres", paramLabel = "URL",
      description = "Keep counts in PostgreSQL, e.g. jdbc:postgresql://127.0.0.1:5432/sluice?user=sluice.")
  String postgres;

  @Option(names = "--postgres-table", defaultValue = "sluice_rate_limit", paramLabel = "NAME",
      description = "PostgreSQL: the table (created if absent). Default: ${DEFAULT-VALUE}.")
  String postgresTable;

  @Option(names = "--store-timeout", defaultValue = "100ms", paramLabel = "DURATION",
      description = "Redis/PostgreSQL: deadline of one decision; past it the failure mode decides. Default: ${DEFAULT-VALUE}.")
  String storeTimeout;

  @Option(names = "--failure-mode", defaultValue = "closed", paramLabel = "MODE",
      description = "Redis/PostgreSQL: when the store cannot answer, closed refuses (503), open allows (and logs), fallback decides"
          + " with a memory limiter of the same policy in this instance. Default: ${DEFAULT-VALUE}.")
  String failureMode;

  @Option(names = "--sweep-interval", defaultValue = "1m", paramLabel = "DURATION",
      description = "PostgreSQL: how often expired rows are deleted. Default: ${DEFAULT-VALUE}.")
  String sweepInterval;

  @Option(names = "--max-keys", defaultValue = "10000", paramLabel = "N",
      description = "Memory store and --failure-mode fallback: most keys tracked per policy; a spray of new keys beyond it is refused,"
          + " never evicting anyone. Default: ${DEFAULT-VALUE}.")
  int maxKeys;

  @Option(names = "--max-key-length", defaultValue = "512", paramLabel = "N",
      description = "Memory store: longest key in UTF-16 code units (an emoji counts two); longer keys are a 400. Default: ${DEFAULT-VALUE}.")
  int maxKeyLength;

  @Option(names = "--shutdown-timeout", defaultValue = "10s", paramLabel = "DURATION",
      description = "On SIGTERM, how long requests in flight may take to finish. Default: ${DEFAULT-VALUE}.")
  String shutdownTimeout;

  @Option(names = "--body-timeout", defaultValue = SluiceServer.DEFAULT_BODY_TIMEOUT, paramLabel = "DURATION",
      description = "How long a request body may take to arrive once its headers have; past it 408 and the connection closes."
          + " At most 1m. Default: ${DEFAULT-VALUE}.")
  String bodyTimeout;

  @Option(names = "--spent-tickets", defaultValue = "100000", paramLabel = "N",
      description = "Most recently refunded tickets remembered (a ticket refunds once). Default: ${DEFAULT-VALUE}.")
  int spentTickets;

  @Option(names = "--envoy-config", paramLabel = "PATH",
      description = "envoyproxy/ratelimit configuration: one YAML file or a directory of them, read unchanged (docs/envoy.md); reloaded with the policy file (SIGHUP, POST /admin/reload, --watch), counts kept. Needs --grpc-port.")
  Path envoyConfig;

  @Option(names = "--grpc-port", paramLabel = "PORT",
      description = "Serve Envoy's rate-limit API (gRPC, with health and reflection) on this port; 0 picks a free port. Off unless given.")
  Integer grpcPort;

  @Option(names = "--envoy-headers", defaultValue = "ietf", paramLabel = "SET",
      description = "Headers ShouldRateLimit asks Envoy to add: ietf (RateLimit, RateLimit-Policy), legacy (X-RateLimit-*), all (both), none. Default: ${DEFAULT-VALUE}.")
  String envoyHeaders;

  @Option(names = "--ticket-keys", paramLabel = "FILE",
      description = "Refund-ticket signing keys shared by every instance, one ID:BASE64 a line (the first signs); else $"
          + TicketKeys.ENV + ", else a random key per process.")
  Path ticketKeys;

  @Option(names = "--max-pending", defaultValue = "" + SluiceServer.DEFAULT_MAX_PENDING, paramLabel = "N",
      description = "Most acquires outstanding on the store at once; past it, 503 overloaded with Retry-After: 1 at once."
          + " Default: ${DEFAULT-VALUE}.")
  int maxPending;

  @Option(names = "--partition-keys", description = "Add the ratelimit-headers draft's pk (a hash of the key, never the key) to"
      + " RateLimit-Policy and RateLimit. Off by default.")
  boolean partitionKeys;

  @Option(names = "--watch", description = "Reload the policy file (and the --envoy-config file or directory) when its content changes (as SIGHUP does); off by default.")
  boolean watch;

  @Option(names = "--admin-port", paramLabel = "PORT",
      description = "Serve the admin API (reload, reset a key, list policies) on this port; off unless given. Needs a token.")
  Integer adminPort;

  @Option(names = "--admin-host", defaultValue = "127.0.0.1", paramLabel = "ADDRESS",
      description = "Address the admin API binds. Default: ${DEFAULT-VALUE} (loopback only).")
  String adminHost;

  @Option(names = "--admin-token-file", paramLabel = "FILE",
      description = "The admin API's bearer token (the file's content, trimmed); else $" + SluiceServer.ADMIN_TOKEN_ENV + ".")
  Path adminTokenFile;

  private String adminToken() throws java.io.IOException {
    if (adminTokenFile != null) {
      if (!java.nio.file.Files.isReadable(adminTokenFile)) {
        throw new IllegalArgumentException("--admin-token-file " + adminTokenFile + " cannot be read");
      }
      return java.nio.file.Files.readString(adminTokenFile).strip();
    }
    return System.getenv(SluiceServer.ADMIN_TOKEN_ENV);
  }

  /**
   * Every flag's rule, checked before anything starts whichever store or API runs, so a flag is
   * never accepted unread ({@code --failure-mode maybe} on the memory store was): each message names
   * the flag, the value and the rule.
   */
  private void checkFlags() {
    if (redis != null && postgres != null) {
      throw new IllegalArgumentException("--redis and --postgres both given; choose one store");
    }
    requirePort("--port", port);
    if (adminPort != null) {
      requirePort("--admin-port", adminPort);
    }
    if (grpcPort != null) {
      requirePort("--grpc-port", grpcPort);
    }
    storeTimeout();
    failureModes();
    Durations.parse("--sweep-interval", sweepInterval);
    checkMemory(maxKeys, maxKeyLength);
    Envoy.headerFamilies(envoyHeaders);
    redisFactory(redisClient);
  }

  /** A port flag's rule: 0 (a free port) to 65535. */
  static int requirePort(String flag, int port) {
    if (port < 0 || port > 65_535) {
      throw new IllegalArgumentException(flag + " " + port + " is out of range; use 0 (a free port) to 65535");
    }
    return port;
  }

  private Duration storeTimeout() {
    Duration timeout = Durations.parse("--store-timeout", storeTimeout);
    if (timeout.compareTo(Duration.ofMillis(1)) < 0) {
      throw new IllegalArgumentException("--store-timeout " + storeTimeout + " is under 1 ms; give the store at least 1ms");
    }
    return timeout;
  }

  /** Each policy's failure mode, through the one parser of the words ({@link FailureModeWords}). */
  private Function<Policy, FailureMode> failureModes() {
    return FailureModeWords.parse("--failure-mode", failureMode, new ThrottledAlert(), maxKeys);
  }

  /** The rules of {@code --max-keys} and {@code --max-key-length}, checked whichever store runs (a flag is never accepted unread). */
  static void checkMemory(int maxKeys, int maxKeyLength) {
    if (maxKeys < 1) {
      throw new IllegalArgumentException("--max-keys " + maxKeys + " is not positive; it must be at least 1");
    }
    if (maxKeyLength < 1) {
      throw new IllegalArgumentException("--max-key-length " + maxKeyLength + " is not positive; it must be at least 1");
    }
    if (maxKeyLength > TicketCodec.MAX_MEMORY_KEY_LENGTH) {
      // A memory-store ticket carries the key itself (the tier is keyed by it); past this, a refund body would exceed 64 KiB.
      throw new IllegalArgumentException("--max-key-length " + maxKeyLength + " exceeds " + TicketCodec.MAX_MEMORY_KEY_LENGTH
          + ", the longest key whose refund ticket fits a request body; for longer keys use --redis or --postgres, which hash keys");
    }
  }

  /**
   * The store the flags name, opened by the kernel's factory of that name; a wrong URL or table is
   * refused naming its flag.
   */
  private Store store() {
    StoreOptions options = StoreOptions.defaults().withFailureModes(failureModes()).withTimeout(storeTimeout())
        .withMemory(maxKeys, maxKeyLength, Ticker.system())
        .withTable(postgresTable, Durations.parse("--sweep-interval", sweepInterval));
    if (redis != null) {
      StoreFactory factory = redisFactory(redisClient);
      try {
        return factory.open(options.withUrl(redis));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("--redis " + e.getMessage(), e);
      }
    }
    if (postgres != null) {
      try {
        PostgresStore.checkUrl(postgres);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("--postgres " + e.getMessage(), e);
      }
      try {
        PostgresStore.checkTable(postgresTable);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("--postgres-table: " + e.getMessage(), e);
      }
      return StoreFactory.named("postgres").open(options.withUrl(postgres));
    }
    return StoreFactory.named("memory").open(options);
  }

  /**
   * The kernel's store factory of {@code --redis-client}: {@code lettuce} is the kernel's own
   * {@code redis}; {@code jedis} and {@code redisson} are the stores {@code redis-jedis} and
   * {@code redis-redisson} their modules provide, found on the class path. Checked before anything
   * starts, with or without {@code --redis}.
   */
  static StoreFactory redisFactory(String client) {
    String c = client == null ? "null" : client.strip().toLowerCase(java.util.Locale.ROOT);
    if (c.equals("lettuce")) {
      return StoreFactory.REDIS;
    }
    if (!c.equals("jedis") && !c.equals("redisson")) {
      throw new IllegalArgumentException("--redis-client '" + client + "' is unknown; use lettuce, jedis or redisson");
    }
    try {
      return StoreFactory.named("redis-" + c);
    } catch (IllegalArgumentException notOnTheClassPath) {
      throw new IllegalArgumentException("--redis-client " + c + " needs sluice-redis-" + c + " and its client on the class path"
          + " (the service jar carries Lettuce only): java -cp sluice-server.jar:sluice-redis-" + c + ".jar:... "
          + "dev.sluice.server.SluiceCli serve ...; or use --redis-client lettuce", notOnTheClassPath);
    }
  }

  /** Logs the open failure mode's admissions, at most once per 10 seconds, so an outage does not flood the log. */
  static final class ThrottledAlert implements FailureMode.FailureAlert {
    private static final System.Logger LOG = System.getLogger(ServeCommand.class.getName());
    private final java.util.concurrent.atomic.AtomicLong next = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong suppressed = new java.util.concurrent.atomic.AtomicLong();

    @Override public void onFailure(Policy policy, dev.sluice.Reason reason, Throwable cause) {
      long now = System.nanoTime();
      long at = next.get();
      if (now - at >= 0 && next.compareAndSet(at, now + 10_000_000_000L)) {
        LOG.log(System.Logger.Level.WARNING, "store failure (" + reason + ") for policy '" + policy.name()
            + "': allowing (--failure-mode open); " + suppressed.getAndSet(0) + " more since the last warning"
            + (cause != null ? "; cause: " + cause : ""));
      } else {
        suppressed.incrementAndGet();
      }
    }
  }

  /** SIGHUP: re-read the policy file; a bad one keeps the policies in force and says why. */
  private void reload(SluiceServer server, PrintStream out) {
    try {
      out.println("sluice: reloaded " + server.reload(config));
    } catch (RuntimeException e) {
      out.println("sluice: reload failed, the policies in force stay: " + e.getMessage());
    }
    out.flush();
  }

  @Override public Integer call() throws Exception {
    PrintStream out = System.out;
    checkFlags();
    Duration stopTimeout = Durations.parse("--shutdown-timeout", shutdownTimeout);
    Duration bodyDeadline = SluiceServer.requireBodyTimeout(Durations.parse("--body-timeout", bodyTimeout), bodyTimeout);
    List<Policy> policies = PolicyFile.read(config);
    Envoy envoy = Envoy.of(envoyConfig, grpcPort, envoyHeaders);
    if (envoy != null) {
      envoy.refuseSharedNames(policies);
    }
    TicketKeys keys = TicketKeys.load(ticketKeys, System.getenv(TicketKeys.ENV));
    String token = adminPort != null ? SluiceServer.requireAdminToken(adminToken()) : null; // before any store connects
    Store store = store();
    SluiceServer server;
    try {
      if (envoy != null) {
        store.check(envoy.config().policies());
      }
      server = new SluiceServer(policies, store, host, port, stopTimeout, Ticker.system(), spentTickets, keys, maxPending);
      server.partitionKeys(partitionKeys).bodyTimeout(bodyDeadline);
      if (adminPort != null) {
        server.admin(adminHost, adminPort, token, config);
      }
    } catch (RuntimeException e) {
      store.close();
      throw e;
    }
    java.util.concurrent.CountDownLatch stopRequested = new java.util.concurrent.CountDownLatch(1);
    Signals.onStop(stopRequested::countDown);
    boolean reloadBySignal = Signals.onReload(() -> reload(server, out));
    server.start();
    PolicyWatch watching;
    try {
      watching = watch ? PolicyWatch.start(config, () -> reload(server, out)) : null;
    } catch (java.io.IOException e) {
      server.stop();
      throw new IllegalArgumentException("--watch cannot watch " + config.toAbsolutePath().getParent() + ": " + e);
    }
    dev.sluice.server.envoy.EnvoyGrpcServer grpc;
    try {
      grpc = envoy == null ? null : envoy.start(store, server, host, stopTimeout);
    } catch (java.io.IOException | RuntimeException e) {
      if (watching != null) {
        watching.close();
      }
      server.stop();
      throw e instanceof java.io.IOException ? new IllegalArgumentException("--grpc-port " + grpcPort + " cannot be bound on " + host
          + ": " + e.getMessage() + (e.getCause() != null ? " (" + e.getCause().getMessage() + ")" : "")) : e;
    }
    PolicyWatch watchingEnvoy = null;
    if (grpc != null) {
      // Every reload (SIGHUP, POST /admin/reload, --watch) re-reads the Envoy configuration too, keeping counts.
      dev.sluice.server.envoy.EnvoyGrpcServer rpc = grpc;
      server.alsoReload(next -> envoy.prepareReload(next, store, rpc));
      if (watch) {
        try {
          watchingEnvoy = PolicyWatch.start(envoyConfig, () -> reload(server, out));
        } catch (java.io.IOException e) {
          if (watching != null) {
            watching.close();
          }
          grpc.stop();
          server.stop();
          throw new IllegalArgumentException("--watch cannot watch " + envoyConfig.toAbsolutePath() + ": " + e);
        }
      }
    }
    String first = policies.get(0).name();
    out.println("sluice: " + policies.size() + " policies from " + config + " ("
        + policies.stream().map(p -> p.name() + " " + p.algorithm().id()).collect(Collectors.joining(", ")) + ")");
    out.println("sluice: store: " + store.describe());
    out.println("sluice: tickets: " + (keys.shared() ? "signed with key '" + keys.signingId() + "' (" + keys.ids().size()
        + (keys.ids().size() == 1 ? " key" : " keys") + "), refundable at every instance holding it"
        : "signed with a key drawn at start, refundable at this process only (give --ticket-keys to share)"));
    if (store.shared()) {
      String down = server.probeStore();
      if (down != null) {
        out.println("sluice: WARNING: the store does not answer yet (" + down + "); decisions follow --failure-mode " + failureMode
            + " until it does");
      }
    }
    out.println("sluice: listening on " + server.listening());
    if (grpc != null) {
      out.println("sluice: envoy rate-limit API (gRPC) on " + host + ":" + grpc.port() + ", domains "
          + String.join(", ", envoy.config().domains()) + " from " + envoyConfig);
    }
    if (adminPort != null) {
      out.println("sluice: admin API on http://" + (adminHost.contains(":") ? "[" + adminHost + "]" : adminHost) + ":" + server.adminPort()
          + " (bearer token; GET /admin/policies, POST /admin/reload, POST /admin/reset)");
    }
    if (!reloadBySignal) {
      out.println("sluice: reload by signal is off: SIGHUP was ignored when the service started (as under nohup);"
          + " reload with --watch or the admin API's POST /admin/reload");
    }
    if (watching != null) {
      out.println("sluice: watching " + config + (watchingEnvoy != null
          ? " and " + envoyConfig + ": a change to either's content reloads both" : ": a change to its content reloads it")
          + ", as SIGHUP does");
    }
    out.println("sluice: try   curl -si -X POST " + server.uri() + "/v1/acquire -H 'Content-Type: application/json'"
        + " -d '{\"policy\":\"" + first + "\",\"key\":\"alice\"}'");
    out.println("sluice: stop with Ctrl-C or SIGTERM");
    out.flush();
    stopRequested.await();
    out.println("sluice: stopping (draining requests in flight for up to " + shutdownTimeout + ")");
    long t0 = System.nanoTime();
    if (watching != null) {
      watching.close();
    }
    if (watchingEnvoy != null) {
      watchingEnvoy.close();
    }
    try {
      if (grpc != null) {
        grpc.stop();
      }
      server.stop();
    } catch (Exception e) {
      out.println("sluice: stop was not clean after " + (System.nanoTime() - t0) / 1_000_000 + " ms: " + e);
      out.flush();
      return 1;
    }
    out.println("sluice: stopped after " + (System.nanoTime() - t0) / 1_000_000 + " ms");
    out.flush();
    return 0;
  }
}
