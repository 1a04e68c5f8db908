package dev.sluice.server;

import dev.sluice.Policy;
import dev.sluice.Ticker;
import dev.sluice.kernel.Readiness;
import dev.sluice.kernel.Store;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/**
 * The rate-limit service: the {@link ApiHandler} on an embedded Jetty 12 server.
 *
 * <p>{@link #stop()} is graceful: the connector stops accepting, requests in flight finish (up to the
 * stop timeout), a request arriving meanwhile on an open connection is served and gets
 * {@code Connection: close}, and then the store is closed.
 */
public final class SluiceServer implements AutoCloseable {
  private final Server jetty;
  private final ServerConnector connector;
  private final Store store;
  private final InFlightHandler inFlight;
  private final ApiHandler api;
  private volatile List<Policy> policies;
  private volatile java.util.function.Function<List<Policy>, java.util.function.Supplier<String>> alsoReload;
  private final Readiness readiness;
  private final HttpConfiguration httpConfiguration;
  private volatile ServerConnector adminConnector;
  private volatile AdminHandler admin;
  static final String ADMIN_TOKEN_ENV = "SLUICE_ADMIN_TOKEN";
  private final Duration stopTimeout;
  /** How long a keep-alive connection may stay idle once a stop has drained the requests in flight. */
  static final long IDLE_GRACE_MILLIS = 500;
  /** At most one store probe a second for {@code /readyz}, however often an orchestrator asks. */
  static final long READINESS_INTERVAL_NANOS = 1_000_000_000L;
  private final ServerMetrics metrics = new ServerMetrics();

  SluiceServer(List<Policy> policies, Store store, String host, int port, Duration stopTimeout, Ticker ticker,
               int spentTicketCapacity) {
    this(policies, store, host, port, stopTimeout, ticker, spentTicketCapacity, TicketKeys.random());
  }

  SluiceServer(List<Policy> policies, Store store, String host, int port, Duration stopTimeout, Ticker ticker,
               int spentTicketCapacity, TicketKeys ticketKeys) {
    this(policies, store, host, port, stopTimeout, ticker, spentTicketCapacity, ticketKeys, DEFAULT_MAX_PENDING);
  }

  /** Most acquires outstanding on the store at once before new ones are shed with 503 {@code overloaded}. */
  static final int DEFAULT_MAX_PENDING = 4096;

  /** With {@code ticketKeys} shared by every instance, a ticket refunds at any of them (once: see {@link SpentSet#of}). */
  SluiceServer(List<Policy> policies, Store store, String host, int port, Duration stopTimeout, Ticker ticker,
               int spentTicketCapacity, TicketKeys ticketKeys, int maxPending) {
    store.check(policies);
    this.store = store;
    this.stopTimeout = stopTimeout;
    this.policies = policies;
    QueuedThreadPool threads = new QueuedThreadPool(64, 4);
    threads.setName("sluice-http");
    jetty = new Server(threads);
    HttpConfiguration http = new HttpConfiguration();
    httpConfiguration = http;
    http.setSendServerVersion(false);
    http.setSendDateHeader(true);
    // Jetty's parser caches header fields and by default matches the cache ignoring case: a second
    // "Authorization: bearer TOKEN" on a connection came back with the first one's value, so a token
    // differing only in case was let into the admin API. Header values are compared as sent.
    http.setHeaderCacheCaseSensitive(true);
    connector = new ServerConnector(jetty, new HttpConnectionFactory(http));
    connector.setHost(host);
    connector.setPort(port);
    // On stop, keep-alive connections stay open while requests are in flight, and a request on one
    // of them is answered (with Connection: close); see stop().
    connector.setShutdownIdleTimeout(Math.max(1, stopTimeout.toMillis()));
    jetty.addConnector(connector);
    readiness = new Readiness(store, READINESS_INTERVAL_NANOS, System::nanoTime);
    if (spentTicketCapacity < 1) {
      throw new IllegalArgumentException("spent-ticket capacity " + spentTicketCapacity + " is not positive; it must be at least 1");
    }
    api = new ApiHandler(policies, store, ticker, new TicketCodec(ticketKeys, store.shared()), SpentSet.of(store, spentTicketCapacity),
        metrics, readiness, maxPending);
    metrics.jetty(threads);
    inFlight = new InFlightHandler(new Handler.Abstract() {
      @Override public boolean handle(Request request, Response response, Callback callback) throws Exception {
        AdminHandler a = admin;
        return a != null && request.getConnectionMetaData().getConnector() == adminConnector
            ? a.handle(request, response, callback) : api.handle(request, response, callback);
      }
    }, metrics);
    jetty.setHandler(inFlight);
    metrics.requestsInFlight(inFlight::count);
    jetty.setErrorHandler(new JsonErrorHandler());
    jetty.setStopTimeout(stopTimeout.toMillis());
    jetty.setStopAtShutdown(false);
  }

  /**
   * Serves the admin API ({@link AdminHandler}) on its own connector at {@code host:port}, guarded by
   * {@code token}; its reload re-reads {@code config}. Call before {@link #start()}.
   */
  SluiceServer admin(String host, int port, String token, java.nio.file.Path config) {
    requireAdminToken(token);
    ServerConnector c = new ServerConnector(jetty, new HttpConnectionFactory(httpConfiguration));
    c.setHost(host);
    c.setPort(port);
    c.setName("admin");
    jetty.addConnector(c);
    adminConnector = c;
    admin = new AdminHandler(this, api, token.strip(), config);
    return this;
  }

  /** Default of {@code --body-timeout}: how long a request body may take to arrive once its headers have. */
  static final String DEFAULT_BODY_TIMEOUT = "5s";

  /** The most {@code --body-timeout} may be: a body of at most 64 KiB needs seconds, and a long wait is what slow clients exploit. */
  static final Duration MAX_BODY_TIMEOUT = Duration.ofMinutes(1);

  /** Fails unless {@code timeout} is a usable {@code --body-timeout}: from 1 ms to {@link #MAX_BODY_TIMEOUT}. */
  static Duration requireBodyTimeout(Duration timeout, String given) {
    if (timeout.compareTo(Duration.ofMillis(1)) < 0) {
      throw new IllegalArgumentException("--body-timeout " + given + " is under 1 ms; give a request body at least 1ms to arrive");
    }
    if (timeout.compareTo(MAX_BODY_TIMEOUT) > 0) {
      throw new IllegalArgumentException("--body-timeout " + given + " is over 1 minute, the most it may be; a body of at most "
          + JsonInput.MAX_BODY_BYTES / 1024 + " KiB needs seconds, and every second is one a slow client can hold");
    }
    return timeout;
  }

  /**
   * How long a request body may take to arrive, from its headers on; past it the request is a 408
   * and its connection closes. A body never holds a request thread while it arrives ({@link RequestBody}).
   */
  SluiceServer bodyTimeout(Duration timeout) {
    requireBodyTimeout(timeout, timeout.toString());
    api.bodyTimeout(timeout);
    // Jetty's idle timeout must not cut a body first (it would be the same 408, later and less clear).
    connector.setIdleTimeout(Math.max(connector.getIdleTimeout(), timeout.toMillis() + 1000));
    return this;
  }

  /** Sends the draft's {@code pk} partition key in the IETF headers (off by default). */
  SluiceServer partitionKeys(boolean on) {
    api.partitionKeys(on);
    return this;
  }

  /** Fails unless {@code token} is a usable admin token (the admin API never runs unauthenticated). */
  static String requireAdminToken(String token) {
    if (token == null || token.isBlank()) {
      throw new IllegalArgumentException("--admin-port needs a token: --admin-token-file FILE or $" + ADMIN_TOKEN_ENV);
    }
    return token;
  }

  /** The admin connector's port, or -1 without one. */
  int adminPort() {
    return adminConnector == null ? -1 : adminConnector.getLocalPort();
  }

  /** Starts listening; after this, {@link #port()} is the bound port (useful with port 0). */
  public SluiceServer start() throws Exception {
    try {
      jetty.start();
    } catch (Exception e) {
      store.close();
      throw e;
    }
    return this;
  }

  public int port() {
    return connector.getLocalPort();
  }

  /**
   * What the listener bound, for the banner: its URI, or for a wildcard host ({@code 0.0.0.0},
   * {@code ::}) the wildcard itself and then the URI to try from this host: the URI alone said
   * 127.0.0.1, as if only loopback were served.
   */
  String listening() {
    java.net.InetSocketAddress local = null;
    if (connector.getTransport() instanceof java.nio.channels.ServerSocketChannel channel) {
      try {
        local = (java.net.InetSocketAddress) channel.getLocalAddress();
      } catch (java.io.IOException e) {
        local = null; // closed under us: say the URI
      }
    }
    if (local == null || !local.getAddress().isAnyLocalAddress()) {
      return uri().toString();
    }
    // The wildcard as given: Java binds 0.0.0.0 as the dual-stack [::], which serves IPv4 too.
    String any = connector.getHost() != null ? connector.getHost() : local.getAddress().getHostAddress();
    return (any.contains(":") ? "[" + any + "]" : any) + ":" + port() + " (every address of this host), e.g. " + uri();
  }

  public URI uri() {
    String host = connector.getHost();
    if (host == null || host.equals("0.0.0.0") || host.equals("::")) {
      host = "127.0.0.1";
    } else if (host.contains(":")) {
      host = "[" + host + "]";
    }
    return URI.create("http://" + host + ":" + port());
  }

  /**
   * Re-reads {@code file} and puts its policies in force; counts survive (a budget is its policy name
   * and key). A bad file changes nothing: the {@link IllegalArgumentException} names the entry and
   * the rule, and the old policies stay. Returns a line saying what changed.
   */
  synchronized String reload(java.nio.file.Path file) {
    List<Policy> next = PolicyFile.read(file);
    var also = alsoReload;
    java.util.function.Supplier<String> then = also == null ? null : also.apply(next); // checks; changes nothing yet
    String changes = api.reload(next);
    policies = next;
    String line = next.size() + " policies from " + file + " (" + changes + ")";
    return then == null ? line : line + "; " + then.get();
  }

  /**
   * Reloads more with every reload of the policy file (SIGHUP, {@code POST /admin/reload},
   * {@code --watch}): {@code prepare} reads and checks its configuration against the new policies,
   * throwing {@link IllegalArgumentException} to keep everything in force, and returns what puts it
   * in force once the policies are. Envoy mode's configuration reloads this way.
   */
  void alsoReload(java.util.function.Function<List<Policy>, java.util.function.Supplier<String>> prepare) {
    alsoReload = prepare;
  }

  /** Probes the store now (no decision): null when it answered, else the reason. */
  String probeStore() {
    return readiness.probe().reason();
  }

  /** The limiter deciding for {@code policy}. */
  dev.sluice.RateLimiter limiterFor(Policy policy) {
    return api.limiter(policy.name());
  }

  /** Requests being handled now (those a graceful stop waits for). */
  long requestsInFlight() {
    return inFlight.count();
  }

  ServerMetrics metrics() {
    return metrics;
  }

  List<Policy> policies() {
    return policies;
  }

  Store store() {
    return store;
  }

  /** Blocks until the server has stopped. */
  public void join() throws InterruptedException {
    jetty.join();
  }

  /** Graceful stop: drains requests in flight up to the stop timeout, then closes the store. */
  public void stop() throws Exception {
    try {
      drain();
      jetty.stop();
    } finally {
      store.close();
    }
  }

  /**
   * Marks every answer from now on {@code Connection: close} and waits for the answers already under
   * way ({@link InFlightHandler#drain}), stops accepting, waits for the requests in flight, and only then gives idle
   * keep-alive connections {@link #IDLE_GRACE_MILLIS} before they are closed: while anything is in
   * flight a client may still send on its open connection and be answered. Jetty's own stop then
   * waits, for what is left of the stop timeout, until every connection has closed.
   */
  private void drain() throws InterruptedException {
    if (!jetty.isStarted()) {
      return;
    }
    long deadline = System.nanoTime() + stopTimeout.toNanos();
    inFlight.drain(); // every answer from now on says Connection: close ...
    while (inFlight.unmarked() > 0 && System.nanoTime() - deadline < 0) {
      Thread.sleep(1); // ... and those already under way end before the connector shuts down
    }
    connector.shutdown();
    while (inFlight.count() > 0 && System.nanoTime() - deadline < 0) {
      Thread.sleep(5); // polling the in-flight count, up to the stop timeout
    }
    connector.setShutdownIdleTimeout(IDLE_GRACE_MILLIS);
    for (org.eclipse.jetty.io.EndPoint ep : connector.getConnectedEndPoints()) {
      ep.setIdleTimeout(IDLE_GRACE_MILLIS);
    }
    jetty.setStopTimeout(Math.max(IDLE_GRACE_MILLIS + 100, (deadline - System.nanoTime()) / 1_000_000));
  }

  /** {@link #stop()}, for try-with-resources. */
  @Override public void close() {
    try {
      stop();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      throw new IllegalStateException("stopping the server failed", e);
    }
  }
}
