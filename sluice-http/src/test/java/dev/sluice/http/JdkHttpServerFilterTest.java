package dev.sluice.http;

import com.sun.net.httpserver.HttpContext;
import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;

/** {@link RateLimitHttpFilter} in front of the JDK's own {@link HttpServer}. */
class JdkHttpServerFilterTest extends AbstractFilterTest {
  private HttpServer server;

  @Override URI start(HttpRateLimit rateLimit) throws Exception {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    HttpContext ctx = server.createContext("/", exchange -> {
      String path = exchange.getRequestURI().getPath();
      int status = respond(path);
      if (usageHeader(path) != null) {
        exchange.getResponseHeaders().set("X-Usage-Tokens", usageHeader(path));
      }
      if (usageAttribute(path) != null) {
        // the JDK filter reads the header only (exchange attributes are the context's on JDK 17)
        exchange.getResponseHeaders().set("X-Usage-Tokens", usageAttribute(path).toString());
      }
      byte[] body = "ok".getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(status, body.length);
      try (OutputStream os = exchange.getResponseBody()) {
        os.write(body);
      }
    });
    ctx.getFilters().add(new RateLimitHttpFilter(rateLimit));
    server.start();
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/");
  }

  @Override void stop() {
    if (server != null) {
      server.stop(0);
    }
  }
}
