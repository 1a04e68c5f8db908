package dev.sluice.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.memory.MemoryRateLimiter;
import jakarta.servlet.AsyncContext;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.Principal;
import java.util.EnumSet;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.junit.jupiter.api.Test;

/** {@link RateLimitServletFilter} in a real embedded Jetty 12 (ee10 servlet). */
class JettyServletFilterTest extends AbstractFilterTest {
  private Server server;

  @Override URI start(HttpRateLimit rateLimit) throws Exception {
    server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost("127.0.0.1");
    connector.setPort(0);
    server.addConnector(connector);
    ServletContextHandler context = new ServletContextHandler();
    context.setContextPath("/");
    // The test's authentication: X-Test-User names the principal.
    context.addFilter(new FilterHolder((Filter) (req, resp, chain) -> {
      HttpServletRequest http = (HttpServletRequest) req;
      String user = http.getHeader(TEST_USER);
      chain.doFilter(user == null ? req : new HttpServletRequestWrapper(http) {
        @Override public Principal getUserPrincipal() {
          return () -> user;
        }
      }, resp);
    }), "/*", EnumSet.of(DispatcherType.REQUEST));
    FilterHolder filter = new FilterHolder(new RateLimitServletFilter(rateLimit));
    filter.setAsyncSupported(true);
    context.addFilter(filter, "/*", EnumSet.of(DispatcherType.REQUEST));
    ServletHolder servlet = new ServletHolder(new HttpServlet() {
      @Override protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        String path = req.getRequestURI();
        if (path.startsWith("/async/")) {
          // Answer from another thread after the filter chain returned, as an async servlet does.
          AsyncContext async = req.startAsync();
          Thread t = new Thread(() -> {
            try {
              resp.setStatus(respond(path.substring("/async".length())));
              resp.getOutputStream().write("ok".getBytes(StandardCharsets.UTF_8));
            } catch (IOException e) {
              throw new UncheckedIOException(e);
            } finally {
              async.complete();
            }
          });
          t.start();
          return;
        }
        int status = respond(path);
        if (usageHeader(path) != null) {
          resp.setHeader("X-Usage-Tokens", usageHeader(path));
        }
        if (usageAttribute(path) != null) {
          req.setAttribute("X-Usage-Tokens", usageAttribute(path));
        }
        if (path.equals("/attr-decimal")) {
          req.setAttribute("X-Usage-Tokens", new java.math.BigDecimal("12.5"));
        }
        resp.setStatus(status);
        resp.setContentType("text/plain");
        resp.getOutputStream().write("ok".getBytes(StandardCharsets.UTF_8));
      }
    });
    servlet.setAsyncSupported(true);
    context.addServlet(servlet, "/*");
    server.setHandler(context);
    server.start();
    return URI.create("http://127.0.0.1:" + connector.getLocalPort() + "/");
  }

  @Override void stop() throws Exception {
    if (server != null) {
      server.stop();
    }
  }

  /** A usage attribute that is a Number but not a whole one (BigDecimal 12.5) was settled at 12. */
  @Test void aFractionalUsageAttributeLeavesTheEstimateCharged() throws Exception {
    MemoryRateLimiter lim = memory(dev.sluice.Policy.fixedWindow("tokens", 1000, java.time.Duration.ofSeconds(60)));
    serve(HttpRateLimit.builder(lim).cost(100, "X-Usage-Tokens").build());
    assertThat(status("/attr-decimal")).isEqualTo(200);
    assertThat(lim.peek("ip:127.0.0.1").remaining()).isEqualTo(900);
  }

  @Test void asyncRequestsAreSettledWhenTheirAsyncCycleCompletes() throws Exception {
    MemoryRateLimiter lim = memory(API);
    serve(HttpRateLimit.builder(lim).skipFailedRequests(true).build());
    for (int i = 0; i < 5; i++) {
      assertThat(status("/async/fail")).isEqualTo(500);
    }
    awaitRemaining(lim, "ip:127.0.0.1", 3);
    for (int i = 0; i < 3; i++) {
      assertThat(status("/async/ok")).isEqualTo(200);
    }
    assertThat(status("/async/ok")).isEqualTo(429);
  }
}
