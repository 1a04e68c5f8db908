package dev.sluice.http;

import com.sun.net.httpserver.Filter;
import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import dev.sluice.internal.Checks;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.security.Principal;
import java.util.List;

/**
 * A filter for the JDK's {@code com.sun.net.httpserver.HttpServer} that rate-limits requests as
 * its {@link HttpRateLimit} says. With a cost ({@link HttpRateLimit.Builder#cost}), the handler
 * reports a request's actual cost in the response header of the configured name (exchange
 * attributes are shared by the whole context on JDK 17, so they are not read).
 *
 * <pre>{@code
 * HttpContext ctx = server.createContext("/api", handler);
 * ctx.getFilters().add(new RateLimitHttpFilter(rateLimit));
 * }</pre>
 */
public final class RateLimitHttpFilter extends Filter {
  private final HttpRateLimit rateLimit;

  public RateLimitHttpFilter(HttpRateLimit rateLimit) {
    this.rateLimit = Checks.notNull("rateLimit", rateLimit);
  }

  @Override public void doFilter(HttpExchange exchange, Chain chain) throws IOException {
    Admission admission = rateLimit.admit(new View(exchange));
    Headers out = exchange.getResponseHeaders();
    if (!admission.verdict.allowed()) {
      admission.headers(out::set);
      byte[] body = admission.verdict.bodyBytes();
      out.set("Content-Type", HttpVerdict.PROBLEM_JSON);
      exchange.sendResponseHeaders(admission.verdict.status(), body.length);
      try (OutputStream os = exchange.getResponseBody()) {
        os.write(body);
      }
      exchange.close();
      return;
    }
    admission.headers(out::set);
    if (!admission.refundsPossible()) {
      chain.doFilter(exchange);
      return;
    }
    try {
      chain.doFilter(exchange);
    } catch (IOException | RuntimeException | Error e) {
      admission.complete(true, -1, name -> null);
      throw e;
    }
    // The response header only: on JDK 17 an exchange's attributes are its context's, shared by
    // every exchange at once, so one request's usage would settle another's.
    admission.complete(false, exchange.getResponseCode(), name -> exchange.getResponseHeaders().getFirst(name));
  }

  @Override public String description() {
    return "Sluice rate limit (policy '" + rateLimit.policy().name() + "')";
  }

  /** An exchange as the key resolvers see it. */
  private static final class View implements RequestView {
    private final HttpExchange x;

    View(HttpExchange x) {
      this.x = x;
    }

    @Override public String remoteAddress() {
      InetSocketAddress a = x.getRemoteAddress();
      return a == null || a.getAddress() == null ? null : IpLiteral.format(a.getAddress().getAddress());
    }

    @Override public String header(String name) { return x.getRequestHeaders().getFirst(name); }

    @Override public List<String> headers(String name) {
      List<String> v = x.getRequestHeaders().get(name);
      return v == null ? List.of() : v;
    }

    @Override public Principal principal() { return x.getPrincipal(); }

    @Override public String method() { return x.getRequestMethod(); }

    @Override public String path() { return x.getRequestURI().getRawPath(); }
  }
}
