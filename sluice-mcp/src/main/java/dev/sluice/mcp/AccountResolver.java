package dev.sluice.mcp;

import io.modelcontextprotocol.common.McpTransportContext;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;

/**
 * Which account a tool call counts against. Returns null when the call carries no account; it is
 * then charged to the one shared {@code unknown} key (throttled together, never unlimited).
 */
@FunctionalInterface
public interface AccountResolver {

  /**
   * The account of a call: {@code context} is what the transport extracted from the request (for
   * HTTP transports, typically the authenticated user your {@code McpTransportContextExtractor} put
   * there), {@code sessionId} the MCP session.
   */
  String accountOf(McpTransportContext context, String sessionId, CallToolRequest request);

  /** The value stored under {@code key} in the transport context (e.g. where your context extractor puts the user id). */
  static AccountResolver transportContext(String key) {
    return (context, sessionId, request) -> {
      Object v = context == null ? null : context.get(key);
      return v == null ? null : v.toString();
    };
  }

  /**
   * The MCP session id. Only a stand-in for servers without authentication: a client can open a new
   * session at will, so pair it with a ceiling.
   */
  static AccountResolver session() {
    return (context, sessionId, request) -> sessionId;
  }

  /**
   * The value under {@code key} in the call's {@code _meta}. The client chooses it, so use this only
   * when the client is trusted to name its account (an internal gateway that authenticated the user),
   * never for clients on the open internet.
   */
  static AccountResolver requestMeta(String key) {
    return (context, sessionId, request) -> {
      Object v = request == null || request.meta() == null ? null : request.meta().get(key);
      return v == null ? null : v.toString();
    };
  }
}
