/** Rate limiting for MCP tool calls: {@link dev.sluice.mcp.RateLimitedTools}. */
package dev.sluice.mcp;
