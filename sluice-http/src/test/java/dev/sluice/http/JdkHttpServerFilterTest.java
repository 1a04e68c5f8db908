package dev.sluice.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpContext;
import com.sun.net.httpserver.HttpServer;
import dev.sluice.Policy;
import dev.sluice.memory.MemoryRateLimiter;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** {@link RateLimitHttpFilter} in front of the JDK's own {@link HttpServer}. */
class JdkHttpServerFilterTest extends AbstractFilterTest {
  private HttpServer server;
  private final CountDownLatch lingering = new CountDownLatch(1);

  @Override URI start(HttpRateLimit rateLimit) throws Exception {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    HttpContext ctx = server.createContext("/", exchange -> {
      String path = exchange.getRequestURI().getPath();
      if (path.startsWith("/linger/")) { // answers in full, then goes on working until the test is done
        exchange.getResponseHeaders().set("X-Usage-Tokens", path.substring("/linger/".length()));
        exchange.sendResponseHeaders(200, 2);
        try (OutputStream os = exchange.getResponseBody()) {
          os.write("ok".getBytes(StandardCharsets.UTF_8));
        }
        try {
          lingering.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        return;
      }
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

  /**
   * A client that has read its whole answer finds the cost settled. The filter settled after the
   * handler returned, while the client could already have its answer and send the next request (a
   * CI run under load: 100 still charged where 30 were reported). It now settles as the handler sends
   * its headers. This handler answers and then goes on working; before the fix the peek saw 900.
   */
  @Test void aClientThatHasItsAnswerFindsTheCostSettledWhileTheHandlerStillRuns() throws Exception {
    MemoryRateLimiter lim = memory(Policy.fixedWindow("tokens", 1000, Duration.ofSeconds(60)));
    serve(HttpRateLimit.builder(lim).cost(100, "X-Usage-Tokens").build());
    try {
      assertThat(get("/linger/30").statusCode()).isEqualTo(200);
      assertThat(lim.peek("ip:127.0.0.1").remaining()).as("reserved 100, settled at 30").isEqualTo(970);
    } finally {
      lingering.countDown();
    }
  }

  /**
   * None here: the JDK server runs a context's {@code Authenticator} after its filters, so no filter,
   * {@link RateLimitHttpFilter} included, sees the principal it sets.
   */
  @Override boolean authenticates() {
    return false;
  }

  @Override void stop() {
    if (server != null) {
      server.stop(0);
    }
  }
}
