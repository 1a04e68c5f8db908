package dev.sluice.mcp;

import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.json.TypeRef;
import io.modelcontextprotocol.spec.McpClientTransport;
import io.modelcontextprotocol.spec.McpSchema;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.function.Function;
import reactor.core.publisher.Mono;

/**
 * The client half of an in-process transport: newline-delimited JSON-RPC (the stdio framing) over a
 * loopback socket, whose other end is the SDK's own {@code StdioServerTransportProvider}.
 */
final class SocketClientTransport implements McpClientTransport {
  private final McpJsonMapper mapper;
  private final Socket socket;
  private final OutputStream out;
  private volatile boolean closed;

  SocketClientTransport(McpJsonMapper mapper, Socket socket) throws IOException {
    this.mapper = mapper;
    this.socket = socket;
    this.out = socket.getOutputStream();
  }

  @Override public Mono<Void> connect(Function<Mono<McpSchema.JSONRPCMessage>, Mono<McpSchema.JSONRPCMessage>> handler) {
    return Mono.fromRunnable(() -> {
      Thread reader = new Thread(() -> {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8))) {
          for (String line; (line = in.readLine()) != null; ) {
            McpSchema.JSONRPCMessage message = McpSchema.deserializeJsonRpcMessage(mapper, line);
            handler.apply(Mono.just(message)).subscribe();
          }
        } catch (IOException e) {
          if (!closed) {
            throw new IllegalStateException("mcp test transport read failed", e);
          }
        }
      }, "mcp-test-client-reader");
      reader.setDaemon(true);
      reader.start();
    });
  }

  @Override public Mono<Void> sendMessage(McpSchema.JSONRPCMessage message) {
    return Mono.fromRunnable(() -> {
      try {
        byte[] line = (mapper.writeValueAsString(message) + "\n").getBytes(StandardCharsets.UTF_8);
        synchronized (out) {
          out.write(line);
          out.flush();
        }
      } catch (IOException e) {
        throw new IllegalStateException("mcp test transport write failed", e);
      }
    });
  }

  @Override public Mono<Void> closeGracefully() {
    return Mono.fromRunnable(() -> {
      closed = true;
      try {
        socket.close();
      } catch (IOException ignored) {
        // closing
      }
    });
  }

  @Override public <T> T unmarshalFrom(Object data, TypeRef<T> typeRef) {
    return mapper.convertValue(data, typeRef);
  }
}
