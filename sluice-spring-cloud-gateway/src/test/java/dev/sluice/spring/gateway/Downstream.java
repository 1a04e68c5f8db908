package dev.sluice.spring.gateway;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The real server behind the gateway: answers every path with 200 "ok", or with the status of its
 * {@code status} query parameter ({@code ?status=500}); counts what reaches it. Also the servlet gateway's
 * (its tests, in dev.sluice.spring.gatewaymvc).
 */
public final class Downstream implements AutoCloseable {
  final HttpServer server;
  /** Requests that reached it. */
  public final AtomicInteger hits = new AtomicInteger();

  public Downstream() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.setExecutor(Executors.newFixedThreadPool(8));
    server.createContext("/", x -> {
      hits.incrementAndGet();
      String q = x.getRequestURI().getQuery();
      int status = q != null && q.startsWith("status=") ? Integer.parseInt(q.substring(7)) : 200;
      byte[] body = "ok".getBytes(StandardCharsets.UTF_8);
      x.sendResponseHeaders(status, body.length);
      try (OutputStream o = x.getResponseBody()) {
        o.write(body);
      }
    });
    server.start();
  }

  public String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  @Override public void close() {
    server.stop(0);
    ((java.util.concurrent.ExecutorService) server.getExecutor()).shutdownNow();
  }
}
