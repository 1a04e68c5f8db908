package dev.sluice.example.gateway;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.cloud.gateway.filter.ratelimit.KeyResolver;
import org.springframework.context.annotation.Bean;
import reactor.core.publisher.Mono;

/**
 * A Spring Cloud Gateway (reactive) with the Sluice route filter; its routes and policies are in
 * application.yaml. The backend it routes to is a small JDK server this application starts itself on
 * {@code backend.port}: it answers {@code hello from <path>}, or the status of {@code ?status=503}.
 */
@SpringBootApplication
public class GatewayExample {
  public static void main(String[] args) {
    SpringApplication.run(GatewayExample.class, args);
  }

  /** The key of the route /orders: the X-Api-Key header (no header: the shared key "unknown"). */
  @Bean
  KeyResolver apiKey() {
    return exchange -> Mono.justOrEmpty(exchange.getRequest().getHeaders().getFirst("X-Api-Key"));
  }

  /** The backend behind the gateway. */
  @Bean(destroyMethod = "stop")
  Backend backend(@Value("${backend.port:8081}") int port) throws IOException {
    return new Backend(port);
  }

  /** A JDK HttpServer answering every path. */
  static final class Backend {
    private final HttpServer server;

    Backend(int port) throws IOException {
      server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 0);
      server.createContext("/", x -> {
        String q = x.getRequestURI().getQuery();
        int status = q != null && q.startsWith("status=") ? Integer.parseInt(q.substring(7)) : 200;
        byte[] body = ("hello from " + x.getRequestURI().getPath() + "\n").getBytes(StandardCharsets.UTF_8);
        x.sendResponseHeaders(status, body.length);
        try (OutputStream o = x.getResponseBody()) {
          o.write(body);
        }
      });
      server.start();
    }

    void stop() {
      server.stop(0);
    }
  }
}
