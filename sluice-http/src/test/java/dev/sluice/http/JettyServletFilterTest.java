package dev.sluice.http;

import jakarta.servlet.DispatcherType;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.EnumSet;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

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
    context.addFilter(new FilterHolder(new RateLimitServletFilter(rateLimit)), "/*", EnumSet.of(DispatcherType.REQUEST));
    context.addServlet(new ServletHolder(new HttpServlet() {
      @Override protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        int status = respond(req.getRequestURI());
        resp.setStatus(status);
        resp.setContentType("text/plain");
        resp.getOutputStream().write("ok".getBytes(StandardCharsets.UTF_8));
      }
    }), "/*");
    server.setHandler(context);
    server.start();
    return URI.create("http://127.0.0.1:" + connector.getLocalPort() + "/");
  }

  @Override void stop() throws Exception {
    if (server != null) {
      server.stop();
    }
  }
}
