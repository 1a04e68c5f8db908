package dev.sluice.mcp;

import dev.sluice.Ticker;
import dev.sluice.guard.RateLimitExceededException;
import dev.sluice.guard.RateLimitGuard;
import dev.sluice.http.HttpVerdict;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.kernel.Inputs;
import io.modelcontextprotocol.common.McpTransportContext;
import io.modelcontextprotocol.server.McpServerFeatures.AsyncToolSpecification;
import io.modelcontextprotocol.server.McpServerFeatures.SyncToolSpecification;
import io.modelcontextprotocol.spec.McpError;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.JSONRPCResponse.JSONRPCError;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import reactor.core.publisher.Mono;

/**
 * Rate-limits the tool calls of an MCP server built on the MCP Java SDK, per account, through a
 * {@link RateLimitGuard}: wrap the tool specifications before registering them.
 *
 * <pre>{@code
 * RateLimitedTools limits = RateLimitedTools.builder(RateLimitGuard.builder(limiter)
 *         .failureMode(FailureMode.open((policy, reason, cause) -> alerts.warn("rate limiter down: " + reason))).build())
 *     .accountResolver(AccountResolver.transportContext("user-id"))
 *     .build();
 * McpSyncServer server = McpServer.sync(transportProvider)
 *     .tools(limits.wrap(searchTool), limits.wrap(exportTool))
 *     .build();
 * }</pre>
 *
 * <p>A refused call does not reach the tool. The client receives a JSON-RPC error whose code mirrors
 * the HTTP status of the same decision ({@link HttpVerdict}): {@link #RATE_LIMITED}
 * ({@value #RATE_LIMITED}, as 429) when over the limit, {@link #LIMITER_UNAVAILABLE}
 * ({@value #LIMITER_UNAVAILABLE}, as 503) when the limiter's state cannot be trusted (corrupt state,
 * an invalid clock); its message is the problem's {@code detail} and its data the very RFC 9457
 * problem the HTTP filters send ({@code type}, {@code title}, {@code status}, {@code detail},
 * {@code allowed}, {@code reason}, {@code policy}, the limit fields, {@code retryAfterSeconds},
 * {@code retryAfterMillis}). A Java client reads the wait back with {@link #retryAfter(McpError)}.
 * When the limiter's store is down the guard's failure mode decides: open unless you give it another,
 * so the call proceeds and the mode's alert is told; an abuse throttle must never lock an account out
 * because of infrastructure. A guard given {@code FailureMode.closed()} refuses instead, with
 * {@link #LIMITER_UNAVAILABLE}.
 */
public final class RateLimitedTools {
  /**
   * The JSON-RPC error code of a refused tool call: in the implementation-defined server-error range
   * (-32000 to -32099), chosen to read as HTTP 429.
   */
  public static final int RATE_LIMITED = -32029;

  /**
   * The JSON-RPC error code of a tool call refused because the limiter could not decide and failed
   * closed (corrupt state, an invalid clock, or a store failure under a closed guard): in the same
   * range, chosen to read as HTTP 503.
   */
  public static final int LIMITER_UNAVAILABLE = -32053;

  private final RateLimitGuard guard;
  private final AccountResolver accounts;
  private final String keyPrefix;

  private RateLimitedTools(Builder b) {
    this.guard = b.guard;
    this.accounts = b.accounts;
    this.keyPrefix = b.keyPrefix;
  }

  public static Builder builder(RateLimitGuard guard) {
    return new Builder(Inputs.notNull("guard", guard));
  }

  /** {@code spec} with its call handler behind the guard. */
  public SyncToolSpecification wrap(SyncToolSpecification spec) {
    Inputs.notNull("spec", spec);
    var handler = spec.callHandler();
    return new SyncToolSpecification(spec.tool(), (exchange, request) -> {
      admit(exchange.transportContext(), exchange.sessionId(), request);
      return handler.apply(exchange, request);
    });
  }

  /**
   * {@code spec} with its call handler behind the guard. The check runs when the returned
   * {@code Mono} is subscribed; it blocks for one limiter call (microseconds on the memory tier,
   * one round trip on a shared store).
   */
  public AsyncToolSpecification wrap(AsyncToolSpecification spec) {
    Inputs.notNull("spec", spec);
    var handler = spec.callHandler();
    return new AsyncToolSpecification(spec.tool(), (exchange, request) -> Mono.defer(() -> {
      admit(exchange.transportContext(), exchange.sessionId(), request);
      return handler.apply(exchange, request);
    }));
  }

  /** Every spec of {@code specs} wrapped. */
  public List<SyncToolSpecification> wrapAll(List<SyncToolSpecification> specs) {
    List<SyncToolSpecification> out = new ArrayList<>(specs.size());
    for (SyncToolSpecification s : specs) {
      out.add(wrap(s));
    }
    return out;
  }

  /** The key a call is charged under: {@code account:<id>}, or {@code unknown} without an account. */
  String keyOf(McpTransportContext context, String sessionId, CallToolRequest request) {
    String account = accounts.accountOf(context, sessionId, request);
    return account == null || account.isBlank() ? "unknown" : keyPrefix + account;
  }

  private void admit(McpTransportContext context, String sessionId, CallToolRequest request) {
    try {
      guard.check(keyOf(context, sessionId, request));
    } catch (RateLimitExceededException e) {
      throw error(e);
    }
  }

  /** The JSON-RPC error of a refusal: code per the verdict's status, the problem's detail, the problem as data. */
  static McpError error(RateLimitExceededException refusal) {
    // The clock only sets the RateLimit header's t, which a JSON-RPC error does not carry.
    HttpVerdict v = HttpVerdict.of(refusal, Ticker.system().nowMicros(), RateLimitHeaders.all());
    int code = v.status() == HttpVerdict.SERVICE_UNAVAILABLE ? LIMITER_UNAVAILABLE : RATE_LIMITED;
    return McpError.builder(code).message(v.detail()).data(new LinkedHashMap<>(v.problem())).build();
  }

  /** The retry-after of a refused tool call as a client received it ({@code retryAfterMillis}), or empty for any other error. */
  public static Optional<Duration> retryAfter(McpError error) {
    JSONRPCError e = error == null ? null : error.getJsonRpcError();
    if (e == null || (e.code() != RATE_LIMITED && e.code() != LIMITER_UNAVAILABLE) || !(e.data() instanceof Map<?, ?> data)) {
      return Optional.empty();
    }
    Object millis = data.get("retryAfterMillis");
    if (millis instanceof Number n) {
      return Optional.of(Duration.ofMillis(n.longValue()));
    }
    Object seconds = data.get("retryAfterSeconds");
    return seconds instanceof Number n ? Optional.of(Duration.ofSeconds(n.longValue())) : Optional.empty();
  }

  /** Builds {@link RateLimitedTools}. */
  public static final class Builder {
    private final RateLimitGuard guard;
    private AccountResolver accounts = (context, sessionId, request) -> null;
    private String keyPrefix = "account:";

    private Builder(RateLimitGuard guard) {
      this.guard = guard;
    }

    /** Which account a call counts against. Default: none, so every call shares {@code unknown}: set one. */
    public Builder accountResolver(AccountResolver resolver) {
      this.accounts = Inputs.notNull("accountResolver", resolver);
      return this;
    }

    /** The prefix of every account key (default {@code account:}). */
    public Builder keyPrefix(String prefix) {
      this.keyPrefix = Inputs.notNull("keyPrefix", prefix);
      return this;
    }

    public RateLimitedTools build() {
      return new RateLimitedTools(this);
    }
  }
}
