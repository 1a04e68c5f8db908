package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpServer;
import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.guard.RateLimitExceededException;
import dev.sluice.guard.RateLimitGuard;
import dev.sluice.http.HttpRateLimit;
import dev.sluice.http.HttpVerdict;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.http.RateLimitHttpFilter;
import dev.sluice.http.RateLimitServletFilter;
import dev.sluice.kernel.Store;
import dev.sluice.mcp.AccountResolver;
import dev.sluice.mcp.RateLimitedTools;
import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.HttpClientStreamableHttpTransport;
import io.modelcontextprotocol.json.McpJsonDefaults;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpServerFeatures.SyncToolSpecification;
import io.modelcontextprotocol.server.McpSyncServer;
import io.modelcontextprotocol.server.transport.HttpServletStreamableServerTransportProvider;
import io.modelcontextprotocol.spec.McpError;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.TextContent;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The same decisions, for every reason, on the primary and the failure-mode path, through every
 * front end Sluice has: the servlet filter on a real Jetty, the JDK filter on a real
 * {@link HttpServer}, the service's HTTP API, the MCP adapter (a real MCP SDK server on Jetty and the
 * SDK's own streamable-HTTP client), the gRPC interceptor (a real Netty server and channel; its status
 * stands for the HTTP status, its metadata for the headers, its description and {@code RetryInfo} for
 * the body's detail and retry delay) and the guard's refusal rendered by {@link HttpVerdict}. They
 * must answer with the same status, the same headers and the same body fields.
 *
 * <p>The one difference is the guard's on purpose, and so the MCP adapter's: a store that is down
 * ({@code STORE_UNAVAILABLE}, {@code TIMEOUT}) lets the call through (an abuse throttle must not lock
 * an account out because of infrastructure); the HTTP front ends refuse it with 503.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class FrontEndsAgreeTest {
  static final long T0 = 1_800_000_000_000_000L; // 2027-01-15T08:00:00Z
  static final Policy API = Policy.fixedWindow("api", 100, Duration.ofMinutes(1));
  static final List<String> LIMIT_HEADERS = List.of("RateLimit-Policy", "RateLimit", "X-RateLimit-Limit",
      "X-RateLimit-Remaining", "X-RateLimit-Reset");

  final ManualTicker ticker = ManualTicker.at(T0);
  final FixedAnswer limiter = new FixedAnswer(API);
  final AtomicInteger handled = new AtomicInteger();
  final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();
  final McpJsonMapper mcpJson = McpJsonDefaults.getMapper();
  RateLimitGuard guard;
  Server jetty;
  URI servletApp;
  HttpServer jdk;
  URI jdkApp;
  SluiceServer service;
  McpSyncServer mcpServer;
  McpSyncClient mcpClient;
  io.grpc.Server grpc;
  io.grpc.ManagedChannel channel;
  static final io.grpc.MethodDescriptor.Marshaller<String> TEXT = new io.grpc.MethodDescriptor.Marshaller<>() {
    @Override public java.io.InputStream stream(String value) {
      return new java.io.ByteArrayInputStream(value.getBytes(StandardCharsets.UTF_8));
    }

    @Override public String parse(java.io.InputStream stream) {
      try {
        return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }
  };
  static final io.grpc.MethodDescriptor<String, String> SAY = io.grpc.MethodDescriptor.<String, String>newBuilder()
      .setType(io.grpc.MethodDescriptor.MethodType.UNARY).setFullMethodName("test.Echo/Say")
      .setRequestMarshaller(TEXT).setResponseMarshaller(TEXT).build();

  /** A limiter that answers every check with the decision the test gave it: the input under test. */
  static final class FixedAnswer implements RateLimiter {
    private final Policy policy;
    volatile Decision answer;

    FixedAnswer(Policy policy) {
      this.policy = policy;
    }

    @Override public Policy policy() { return policy; }

    @Override public Decision tryAcquire(String key, long permits, Policy p) { return answer; }

    @Override public Decision peek(String key, Policy p) { return answer; }

    @Override public Refund refund(Ticket ticket) { return Refund.NO_EFFECT; }

    @Override public void reset(String key, Policy p) {}
  }

  /** One decision fed to every front end. */
  record Case(String name, Decision decision) {
    @Override public String toString() { return name; }
  }

  static Stream<Case> cases() {
    List<Case> cases = new ArrayList<>();
    cases.add(new Case("allowed", Decision.allowed(API, 57, T0 + 60_000_000, new Ticket.Issuer().issue(API, "k", 1, T0))));
    for (Reason r : List.of(Reason.STORE_UNAVAILABLE, Reason.TIMEOUT)) {
      // What FailureMode.open answers: allowed, nothing counted, no store to report limits from.
      cases.add(new Case("allowed " + r + " failure_mode", Decision.builder(API).allowed(r).path(Path.FAILURE_MODE).resetAtMicros(T0).build()));
    }
    for (Reason r : Reason.values()) {
      if (r == Reason.WITHIN_LIMIT) {
        continue;
      }
      // 39.500001 s: Retry-After 40, retryAfterMillis 39501, both rounded up.
      cases.add(new Case("refused " + r + " primary", Decision.refused(API, r, 0, T0 + 40_000_000, 39_500_001)));
      // 250 µs: Retry-After 1, retryAfterMillis 1 (rounded up, at least 1).
      cases.add(new Case("refused " + r + " failure_mode", Decision.builder(API).refused(r).path(Path.FAILURE_MODE).resetAtMicros(T0 + 250).retryAfterMicros(250).build()));
    }
    return cases.stream();
  }

  /** What the issue decided, written out here rather than read back from the code under test. */
  static int expectedStatus(Decision d) {
    if (d.allowed()) {
      return 200;
    }
    return switch (d.reason()) {
      case LIMIT_EXCEEDED, KEY_TABLE_FULL, CONTENTION -> 429;
      case STORE_UNAVAILABLE, TIMEOUT, CORRUPT_STATE, INVALID_CLOCK -> 503;
      case WITHIN_LIMIT -> throw new AssertionError("not a refusal reason");
    };
  }

  /** What one front end answered: status, the rate-limit headers (and Content-Type of a refusal), the JSON body fields. */
  record Answer(int status, Map<String, String> headers, JsonNode body) {}

  @BeforeAll void start() throws Exception {
    HttpRateLimit rateLimit = HttpRateLimit.builder(limiter).ticker(ticker).build();
    guard = RateLimitGuard.builder(limiter).failureMode(FailureMode.open((policy, reason, cause) -> { })).build();

    // One Jetty: the servlet filter in front of an application at /app, and an MCP SDK server at /mcp.
    jetty = new Server();
    ServerConnector connector = new ServerConnector(jetty);
    connector.setHost("127.0.0.1");
    connector.setPort(0);
    jetty.addConnector(connector);
    ServletContextHandler context = new ServletContextHandler();
    context.setContextPath("/");
    context.addFilter(new FilterHolder(new RateLimitServletFilter(rateLimit)), "/app/*", EnumSet.of(DispatcherType.REQUEST));
    context.addServlet(new ServletHolder(new HttpServlet() {
      @Override protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        handled.incrementAndGet();
        resp.setContentType("text/plain");
        resp.getOutputStream().write("ok".getBytes(StandardCharsets.UTF_8));
      }
    }), "/app/*");
    HttpServletStreamableServerTransportProvider mcpTransport = HttpServletStreamableServerTransportProvider.builder()
        .jsonMapper(mcpJson).mcpEndpoint("/mcp").build();
    ServletHolder mcpHolder = new ServletHolder(mcpTransport);
    mcpHolder.setAsyncSupported(true);
    context.addServlet(mcpHolder, "/mcp");
    jetty.setHandler(context);
    RateLimitedTools limits = RateLimitedTools.builder(guard).accountResolver(AccountResolver.requestMeta("account")).build();
    SyncToolSpecification echo = new SyncToolSpecification(
        McpSchema.Tool.builder("echo", Map.of("type", "object")).description("echoes its text").build(),
        (exchange, request) -> {
          handled.incrementAndGet();
          return CallToolResult.builder().content(List.of(TextContent.builder("echo").build())).build();
        });
    mcpServer = McpServer.sync(mcpTransport).serverInfo("sluice-test", "1")
        .capabilities(McpSchema.ServerCapabilities.builder().tools(true).build())
        .tools(limits.wrap(echo)).build();
    jetty.start();
    String base = "http://127.0.0.1:" + connector.getLocalPort();
    servletApp = URI.create(base + "/app/ok");
    mcpClient = McpClient.sync(HttpClientStreamableHttpTransport.builder(base).endpoint("/mcp").build())
        .requestTimeout(Duration.ofSeconds(20)).build();
    mcpClient.initialize();

    jdk = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    jdk.createContext("/", exchange -> {
      handled.incrementAndGet();
      byte[] body = "ok".getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(200, body.length);
      try (OutputStream os = exchange.getResponseBody()) {
        os.write(body);
      }
    }).getFilters().add(new RateLimitHttpFilter(rateLimit));
    jdk.start();
    jdkApp = URI.create("http://127.0.0.1:" + jdk.getAddress().getPort() + "/ok");

    Store fixed = new Store() {
      @Override public String name() { return "fixed"; }

      @Override public String describe() { return "a limiter that answers what the test says"; }

      @Override public boolean shared() { return false; }

      @Override public RateLimiter limiter(Policy policy, RateLimitListener listener) { return limiter; }
    };
    service = new SluiceServer(List.of(API), fixed, "127.0.0.1", 0, Duration.ofSeconds(5), ticker, 100).start();

    io.grpc.ServerServiceDefinition say = io.grpc.ServerServiceDefinition.builder("test.Echo")
        .addMethod(SAY, io.grpc.stub.ServerCalls.asyncUnaryCall((String request, io.grpc.stub.StreamObserver<String> out) -> {
          handled.incrementAndGet();
          out.onNext("ok");
          out.onCompleted();
        })).build();
    dev.sluice.grpc.RateLimitInterceptor grpcLimits = dev.sluice.grpc.RateLimitInterceptor.builder().limit("test.Echo/*", limiter)
        .ticker(ticker).build();
    grpc = io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
        .addService(io.grpc.ServerInterceptors.intercept(say, grpcLimits)).build().start();
    channel = io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder.forAddress("127.0.0.1", grpc.getPort()).usePlaintext().build();
  }

  @AfterAll void stop() throws Exception {
    if (mcpClient != null) {
      mcpClient.closeGracefully();
    }
    if (mcpServer != null) {
      mcpServer.closeGracefully();
    }
    if (jetty != null) {
      jetty.stop();
    }
    if (jdk != null) {
      jdk.stop(0);
    }
    if (service != null) {
      service.stop();
    }
    if (channel != null) {
      channel.shutdownNow();
    }
    if (grpc != null) {
      grpc.shutdownNow();
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void everyFrontEndAnswersTheSame(Case c) throws Exception {
    Decision d = c.decision();
    limiter.answer = d;
    int status = expectedStatus(d);

    Answer servlet = http(HttpRequest.newBuilder(servletApp).GET());
    Answer jdkFilter = http(HttpRequest.newBuilder(jdkApp).GET());
    Answer api = http(HttpRequest.newBuilder(service.uri().resolve("/v1/acquire")).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"policy\":\"api\",\"key\":\"alice\"}")));
    Answer rendered = d.allowed() ? render(HttpVerdict.of(d, ticker.nowMicros(), RateLimitHeaders.all()))
        : render(HttpVerdict.of(new RateLimitExceededException(d), ticker.nowMicros(), RateLimitHeaders.all()));

    // The HTTP front ends and a web app rendering the guard's exception: one status, one set of headers.
    assertThat(servlet.status()).isEqualTo(status);
    assertThat(jdkFilter).isEqualTo(servlet);
    assertThat(api.status()).isEqualTo(status);
    assertThat(api.headers()).isEqualTo(servlet.headers());
    assertThat(rendered.status()).isEqualTo(status);
    assertThat(rendered.headers()).isEqualTo(servlet.headers());

    // The gRPC interceptor: its status for the HTTP status, its metadata for the headers, its
    // description and RetryInfo for the body's detail and exact retry delay.
    int handledBeforeGrpc = handled.get();
    Answer rpc = grpc();
    assertThat(rpc.status()).isEqualTo(status);
    Map<String, String> withoutType = new LinkedHashMap<>(servlet.headers());
    withoutType.remove("Content-Type");
    assertThat(rpc.headers()).isEqualTo(withoutType);
    assertThat(handled.get() - handledBeforeGrpc).as("the call ran").isEqualTo(status == 200 ? 1 : 0);
    if (status != 200) {
      assertThat(rpc.body().get("detail")).isEqualTo(servlet.body().get("detail"));
      assertThat(rpc.body().get("retryAfterMicros").longValue()).isEqualTo(d.retryAfterMicros());
    }

    // What the headers say, whoever sent them.
    boolean limits = status != 503 && d.path() != Path.FAILURE_MODE;
    if (status == 200) {
      assertThat(servlet.headers()).doesNotContainKey("Retry-After");
    } else {
      assertThat(servlet.headers()).containsEntry("Retry-After", d.path() == Path.PRIMARY ? "40" : "1")
          .containsEntry("Content-Type", HttpVerdict.PROBLEM_JSON);
    }
    for (String h : LIMIT_HEADERS) {
      assertThat(servlet.headers().containsKey(h)).as(h).isEqualTo(limits);
    }

    // The body fields: the filters' problem body is the service's refusal body; an allowed service
    // body is the same fields plus its ticket.
    JsonNode fields;
    if (status == 200) {
      ObjectNode body = (ObjectNode) api.body().deepCopy();
      assertThat(body.has("ticket")).isEqualTo(d.ticket().isPresent());
      body.remove("ticket");
      assertThat(body).isEqualTo(rendered.body());
      fields = body;
    } else {
      assertThat(servlet.body()).isNotNull();
      assertThat(jdkFilter.body()).isEqualTo(servlet.body());
      assertThat(api.body()).isEqualTo(servlet.body());
      assertThat(rendered.body()).isEqualTo(servlet.body());
      assertThat(servlet.body().get("status").intValue()).isEqualTo(status);
      assertThat(servlet.body().get("type").textValue()).isEqualTo("about:blank");
      assertThat(servlet.body().get("title").textValue()).isEqualTo(status == 429 ? "Too Many Requests" : "Service Unavailable");
      fields = servlet.body();
    }
    assertThat(fields.get("allowed").booleanValue()).isEqualTo(d.allowed());
    assertThat(fields.get("reason").textValue()).isEqualTo(d.reason().name().toLowerCase(Locale.ROOT));
    assertThat(fields.get("policy").textValue()).isEqualTo("api");
    assertThat(fields.has("path")).isEqualTo(d.path() != Path.PRIMARY);
    assertThat(fields.has("limit")).isEqualTo(limits);
    assertThat(fields.has("remaining")).isEqualTo(limits);
    assertThat(fields.has("resetAt")).isEqualTo(limits);
    long seconds = d.allowed() ? 0 : d.path() == Path.PRIMARY ? 40 : 1;
    long millis = d.allowed() ? 0 : d.path() == Path.PRIMARY ? 39_501 : 1;
    assertThat(fields.get("retryAfterSeconds").longValue()).isEqualTo(seconds);
    assertThat(fields.get("retryAfterMillis").longValue()).isEqualTo(millis);

    // The guard and the MCP adapter behind it: the same answer, except that a store outage lets the call through.
    boolean guardFailsOpen = !d.allowed() && (d.reason() == Reason.STORE_UNAVAILABLE || d.reason() == Reason.TIMEOUT);
    Answer guarded;
    try {
      Decision passed = guard.check("account:alice");
      guarded = render(HttpVerdict.of(passed, ticker.nowMicros(), RateLimitHeaders.all()));
    } catch (RateLimitExceededException e) {
      guarded = render(HttpVerdict.of(e, ticker.nowMicros(), RateLimitHeaders.all()));
    }
    int handledBefore = handled.get();
    Answer mcp = mcp();
    if (guardFailsOpen) {
      assertThat(guarded.status()).isEqualTo(200);
      assertThat(guarded.headers()).isEmpty(); // nothing was counted: no limits to report
      assertThat(mcp.status()).isEqualTo(200);
      assertThat(handled.get()).as("the tool ran").isEqualTo(handledBefore + 1);
    } else {
      assertThat(guarded).isEqualTo(rendered);
      assertThat(mcp.status()).isEqualTo(status);
      if (status != 200) {
        assertThat(mcp.body()).isEqualTo(servlet.body());
        assertThat(handled.get()).as("the tool did not run").isEqualTo(handledBefore);
      }
    }
  }

  /** One request through a real client; a refusal's body parsed, an allowed one left to the application. */
  private Answer http(HttpRequest.Builder request) throws Exception {
    HttpResponse<String> r = client.send(request.timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    Map<String, String> headers = new LinkedHashMap<>();
    for (String h : List.of("Retry-After", "RateLimit-Policy", "RateLimit", "X-RateLimit-Limit", "X-RateLimit-Remaining",
        "X-RateLimit-Reset")) {
      List<String> values = r.headers().allValues(h);
      if (!values.isEmpty()) {
        assertThat(values).as(h + " sent once").hasSize(1);
        headers.put(h, values.get(0));
      }
    }
    boolean refused = r.statusCode() != 200;
    if (refused) {
      headers.put("Content-Type", r.headers().firstValue("Content-Type").orElse(null));
    }
    boolean json = refused || r.uri().getPath().startsWith("/v1/");
    return new Answer(r.statusCode(), headers, json ? ServerApiTest.JSON.readTree(r.body()) : null);
  }

  /** What a web application sends for a verdict: its status, headers, and problem body (its fields when allowed). */
  private static Answer render(HttpVerdict v) throws Exception {
    Map<String, String> headers = new LinkedHashMap<>();
    for (HttpVerdict.Header h : v.headers()) {
      headers.put(h.name(), h.value());
    }
    if (!v.allowed()) {
      headers.put("Content-Type", HttpVerdict.PROBLEM_JSON);
    }
    String body = v.allowed() ? ServerApiTest.JSON.writeValueAsString(v.fields()) : v.body();
    return new Answer(v.status(), headers, ServerApiTest.JSON.readTree(body));
  }

  /**
   * One unary call through a real channel: 200 when it ran, 429 for {@code RESOURCE_EXHAUSTED}, 503
   * for {@code UNAVAILABLE}; the limit fields from the response headers or trailers, under their HTTP
   * names; a refusal's description and {@code RetryInfo} delay as {@code detail} and {@code retryAfterMicros}.
   */
  private Answer grpc() throws Exception {
    java.util.concurrent.atomic.AtomicReference<io.grpc.Metadata> headers = new java.util.concurrent.atomic.AtomicReference<>();
    java.util.concurrent.atomic.AtomicReference<io.grpc.Metadata> trailers = new java.util.concurrent.atomic.AtomicReference<>();
    io.grpc.Channel c = io.grpc.ClientInterceptors.intercept(channel,
        io.grpc.stub.MetadataUtils.newCaptureMetadataInterceptor(headers, trailers));
    int status;
    ObjectNode body = null;
    try {
      assertThat(io.grpc.stub.ClientCalls.blockingUnaryCall(c, SAY, io.grpc.CallOptions.DEFAULT.withDeadlineAfter(10,
          java.util.concurrent.TimeUnit.SECONDS), "hi")).isEqualTo("ok");
      status = 200;
    } catch (io.grpc.StatusRuntimeException e) {
      status = switch (e.getStatus().getCode()) {
        case RESOURCE_EXHAUSTED -> 429;
        case UNAVAILABLE -> 503;
        default -> fail("unexpected gRPC status " + e.getStatus());
      };
      // google.rpc.RetryInfo read off the wire: Envoy's API jar, on this module path, holds a
      // com.google.rpc package of its own without RetryInfo, so the class is not compiled against here.
      com.google.protobuf.Any any = io.grpc.protobuf.StatusProto.fromThrowable(e).getDetails(0);
      assertThat(any.getTypeUrl()).isEqualTo("type.googleapis.com/google.rpc.RetryInfo");
      com.google.protobuf.UnknownFieldSet retry = com.google.protobuf.UnknownFieldSet.parseFrom(any.getValue());
      com.google.protobuf.UnknownFieldSet delay = com.google.protobuf.UnknownFieldSet.parseFrom(
          retry.getField(1).getLengthDelimitedList().get(0)); // retry_delay, a google.protobuf.Duration
      long seconds = delay.hasField(1) ? delay.getField(1).getVarintList().get(0) : 0;
      long nanos = delay.hasField(2) ? delay.getField(2).getVarintList().get(0) : 0;
      body = ServerApiTest.JSON.createObjectNode();
      body.put("detail", e.getStatus().getDescription());
      body.put("retryAfterMicros", seconds * 1_000_000L + nanos / 1_000);
    }
    Map<String, String> fields = new LinkedHashMap<>();
    for (String h : List.of("Retry-After", "RateLimit-Policy", "RateLimit", "X-RateLimit-Limit", "X-RateLimit-Remaining",
        "X-RateLimit-Reset")) {
      io.grpc.Metadata.Key<String> key = io.grpc.Metadata.Key.of(h.toLowerCase(Locale.ROOT), io.grpc.Metadata.ASCII_STRING_MARSHALLER);
      for (io.grpc.Metadata m : java.util.Arrays.asList(headers.get(), trailers.get())) {
        if (m != null && m.get(key) != null) {
          fields.put(h, m.get(key));
        }
      }
    }
    return new Answer(status, fields, body);
  }

  /** One tool call through the real MCP client: 200 when the tool ran, else the status the error code stands for, and its data. */
  private Answer mcp() throws Exception {
    try {
      CallToolResult r = mcpClient.callTool(new CallToolRequest("echo", Map.of(), Map.of("account", "alice")));
      assertThat(((TextContent) r.content().get(0)).text()).isEqualTo("echo");
      return new Answer(200, Map.of(), null);
    } catch (McpError e) {
      int code = e.getJsonRpcError().code();
      int status = switch (code) {
        case RateLimitedTools.RATE_LIMITED -> 429;
        case RateLimitedTools.LIMITER_UNAVAILABLE -> 503;
        default -> fail("unexpected JSON-RPC error " + code + ": " + e.getMessage());
      };
      JsonNode data = ServerApiTest.JSON.readTree(mcpJson.writeValueAsString(e.getJsonRpcError().data()));
      assertThat(e.getJsonRpcError().message()).isEqualTo(data.get("detail").textValue());
      assertThat(RateLimitedTools.retryAfter(e)).contains(Duration.ofMillis(data.get("retryAfterMillis").longValue()));
      return new Answer(status, Map.of(), data);
    }
  }
}
