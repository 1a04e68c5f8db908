package dev.sluice.mcp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.FailureMode;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Ticker;
import dev.sluice.guard.RateLimitGuard;
import dev.sluice.jdbc.store.DownJdbcStore;
import dev.sluice.memory.MemoryRateLimiter;
import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.json.McpJsonDefaults;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.server.McpAsyncServer;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpServerFeatures.AsyncToolSpecification;
import io.modelcontextprotocol.server.McpServerFeatures.SyncToolSpecification;
import io.modelcontextprotocol.server.McpSyncServer;
import io.modelcontextprotocol.server.transport.StdioServerTransportProvider;
import io.modelcontextprotocol.spec.McpError;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.TextContent;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/** A real MCP SDK server and client over an in-process (loopback socket) transport. */
class RateLimitedToolsTest {
  private final McpJsonMapper mapper = McpJsonDefaults.getMapper();
  private final ManualTicker ticker = ManualTicker.at(1_700_000_000_000_000L);
  private final AtomicInteger toolRuns = new AtomicInteger();
  private McpSyncServer server;
  private McpAsyncServer asyncServer;
  private McpSyncClient client;
  private Socket serverSide;

  @AfterEach void tearDown() throws IOException {
    if (client != null) {
      client.closeGracefully();
    }
    if (server != null) {
      server.closeGracefully();
    }
    if (asyncServer != null) {
      asyncServer.closeGracefully().block(Duration.ofSeconds(10));
    }
    if (serverSide != null) {
      serverSide.close();
    }
  }

  private void start(RateLimitedTools limits) throws IOException {
    start(limits, false);
  }

  private void start(RateLimitedTools limits, boolean async) throws IOException {
    SyncToolSpecification echo = new SyncToolSpecification(
        McpSchema.Tool.builder("echo", Map.of("type", "object")).description("echoes its text").build(),
        (exchange, request) -> {
          toolRuns.incrementAndGet();
          return CallToolResult.builder().content(List.of(TextContent.builder("echo " + request.arguments().get("text")).build())).build();
        });
    Socket clientSide;
    try (ServerSocket listener = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      clientSide = new Socket();
      clientSide.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), listener.getLocalPort()), 5_000);
      serverSide = listener.accept();
    }
    StdioServerTransportProvider transport =
        new StdioServerTransportProvider(mapper, serverSide.getInputStream(), serverSide.getOutputStream());
    if (async) {
      AsyncToolSpecification asyncEcho = new AsyncToolSpecification(echo.tool(),
          (exchange, request) -> Mono.fromCallable(() -> echo.callHandler().apply(null, request)));
      asyncServer = McpServer.async(transport)
          .serverInfo("sluice-test", "1")
          .capabilities(McpSchema.ServerCapabilities.builder().tools(true).build())
          .tools(limits.wrap(asyncEcho))
          .build();
    } else {
      server = McpServer.sync(transport)
          .serverInfo("sluice-test", "1")
          .capabilities(McpSchema.ServerCapabilities.builder().tools(true).build())
          .tools(limits.wrap(echo))
          .build();
    }
    client = McpClient.sync(new SocketClientTransport(mapper, clientSide)).requestTimeout(Duration.ofSeconds(20)).build();
    client.initialize();
  }

  private CallToolResult call(String account) {
    return client.callTool(new CallToolRequest("echo", Map.of("text", "hi"), Map.of("account", account)));
  }

  private static String text(CallToolResult r) {
    return ((TextContent) r.content().get(0)).text();
  }

  @Test void aToolCallOverTheLimitIsRefusedWithTheTypedErrorPerAccount() throws IOException {
    Policy tools = Policy.fixedWindow("mcp-tools", 2, Duration.ofMinutes(1));
    MemoryRateLimiter limiter = MemoryRateLimiter.builder(tools).ticker(ticker).build();
    start(RateLimitedTools.builder(RateLimitGuard.builder(limiter).build())
        .accountResolver(AccountResolver.requestMeta("account")).build());

    assertThat(text(call("alice"))).isEqualTo("echo hi");
    assertThat(text(call("alice"))).isEqualTo("echo hi");
    ticker.advance(Duration.ofMillis(20_500));
    assertThatThrownBy(() -> call("alice")).isInstanceOfSatisfying(McpError.class, e -> {
      assertThat(e.getJsonRpcError().code()).isEqualTo(RateLimitedTools.RATE_LIMITED);
      assertThat(e.getJsonRpcError().message()).isEqualTo("Rate limit of policy 'mcp-tools' exceeded; retry after 40 seconds.");
      // The data is the problem body an HTTP filter sends for the same refusal.
      @SuppressWarnings("unchecked")
      Map<String, Object> data = (Map<String, Object>) e.getJsonRpcError().data();
      assertThat(data).containsExactly(
          Map.entry("type", "about:blank"), Map.entry("title", "Too Many Requests"), Map.entry("status", 429),
          Map.entry("detail", "Rate limit of policy 'mcp-tools' exceeded; retry after 40 seconds."),
          Map.entry("allowed", false), Map.entry("reason", "limit_exceeded"), Map.entry("policy", "mcp-tools"),
          Map.entry("limit", 2), Map.entry("remaining", 0), Map.entry("resetAt", "2023-11-14T22:14:20Z"),
          Map.entry("retryAfterSeconds", 40), Map.entry("retryAfterMillis", 39_500));
      assertThat(RateLimitedTools.retryAfter(e)).contains(Duration.ofMillis(39_500));
    });
    assertThat(toolRuns).hasValue(2);
    assertThat(text(call("bob"))).isEqualTo("echo hi");
    assertThat(limiter.peek("account:alice").remaining()).isZero();
    assertThat(limiter.peek("account:bob").remaining()).isEqualTo(1);
    ticker.advance(Duration.ofSeconds(40));
    assertThat(text(call("alice"))).isEqualTo("echo hi");
  }

  @Test void aToolCallIsAllowedWhenTheStoreIsDownAndTheAlertIsTold() throws IOException {
    Policy tools = Policy.fixedWindow("mcp-tools", 1, Duration.ofMinutes(1));
    List<Reason> alerts = new CopyOnWriteArrayList<>();
    RateLimiter down = DownJdbcStore.limiter(tools, FailureMode.closed(), RateLimitListener.NONE);
    start(RateLimitedTools.builder(RateLimitGuard.builder(down)
            .failureMode(FailureMode.open((policy, reason, cause) -> alerts.add(reason))).build())
        .accountResolver(AccountResolver.requestMeta("account")).build());
    for (int i = 0; i < 4; i++) {
      assertThat(text(call("alice"))).isEqualTo("echo hi");
    }
    assertThat(toolRuns).hasValue(4);
    assertThat(alerts).hasSize(4).containsOnly(Reason.STORE_UNAVAILABLE);
  }

  /** The guard's contract: with nothing configured it fails open, so a tool call proceeds while the store is down. */
  @Test void aGuardBuiltWithNothingElseFailsOpen() throws IOException {
    Policy tools = Policy.fixedWindow("mcp-tools", 1, Duration.ofMinutes(1));
    RateLimiter down = DownJdbcStore.limiter(tools, FailureMode.closed(), RateLimitListener.NONE);
    start(RateLimitedTools.builder(RateLimitGuard.builder(down).build())
        .accountResolver(AccountResolver.requestMeta("account")).build());
    for (int i = 0; i < 3; i++) {
      assertThat(text(call("alice"))).isEqualTo("echo hi");
    }
    assertThat(toolRuns).hasValue(3);
  }

  @Test void aClosedGuardRefusesWhileTheStoreIsDownAsUnavailable() throws IOException {
    Policy tools = Policy.fixedWindow("mcp-tools", 1, Duration.ofMinutes(1));
    RateLimiter down = DownJdbcStore.limiter(tools, FailureMode.closed(), RateLimitListener.NONE);
    start(RateLimitedTools.builder(RateLimitGuard.builder(down).failureMode(FailureMode.closed()).build())
        .accountResolver(AccountResolver.requestMeta("account")).build());
    assertThatThrownBy(() -> call("alice")).isInstanceOfSatisfying(McpError.class,
        e -> assertThat(e.getJsonRpcError().code()).isEqualTo(RateLimitedTools.LIMITER_UNAVAILABLE));
    assertThat(toolRuns).hasValue(0);
  }

  @Test void anAsyncToolIsGuardedToo() throws IOException {
    Policy tools = Policy.fixedWindow("mcp-tools", 1, Duration.ofMinutes(1));
    MemoryRateLimiter limiter = MemoryRateLimiter.builder(tools).ticker(ticker).build();
    start(RateLimitedTools.builder(RateLimitGuard.builder(limiter).build())
        .accountResolver(AccountResolver.requestMeta("account")).build(), true);
    assertThat(text(call("alice"))).isEqualTo("echo hi");
    assertThatThrownBy(() -> call("alice")).isInstanceOfSatisfying(McpError.class,
        e -> assertThat(RateLimitedTools.retryAfter(e)).contains(Duration.ofMinutes(1)));
    assertThat(toolRuns).hasValue(1);
  }
}
