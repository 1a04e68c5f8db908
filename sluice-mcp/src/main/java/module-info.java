/** Rate limits the tool calls of a server built on the MCP Java SDK, per account, through the Sluice guard. */
module dev.sluice.mcp {
  requires transitive dev.sluice.core;
  requires dev.sluice.kernel;
  requires dev.sluice.http;
  requires transitive io.modelcontextprotocol.sdk.mcp.core;
  requires reactor.core;

  exports dev.sluice.mcp;
}
