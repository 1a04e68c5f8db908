package dev.sluice.http;

import com.sun.net.httpserver.Filter;
import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpContext;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpPrincipal;
import com.sun.net.httpserver.HttpsExchange;
import dev.sluice.kernel.Inputs;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.security.Principal;
import java.util.List;
import java.util.function.Function;
import java.util.function.IntConsumer;
import javax.net.ssl.SSLSession;

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
    this.rateLimit = Inputs.notNull("rateLimit", rateLimit);
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
    // The refund or settlement runs as the handler sends its response headers, so that a client
    // never reads its answer before the permits are back: run after the handler, it raced the
    // client's next request. From the response header only: on JDK 17 an exchange's attributes are
    // its context's, shared by every exchange at once, so one request's usage would settle another's.
    Function<String, Object> usage = name -> exchange.getResponseHeaders().getFirst(name);
    IntConsumer beforeHeaders = status -> admission.complete(false, status, usage);
    try {
      chain.doFilter(exchange instanceof HttpsExchange s ? new SecureCompleting(s, beforeHeaders) : new Completing(exchange, beforeHeaders));
    } catch (IOException | RuntimeException | Error e) {
      admission.complete(true, -1, name -> null);
      throw e;
    }
    admission.complete(false, exchange.getResponseCode(), usage); // a handler that sent no headers; once per request
  }

  @Override public String description() {
    return "Sluice rate limit (policy '" + rateLimit.policy().name() + "')";
  }

  /** The exchange, completing the admission just before its response headers are sent. */
  private static final class Completing extends HttpExchange {
    private final HttpExchange x;
    private final IntConsumer beforeHeaders;

    Completing(HttpExchange x, IntConsumer beforeHeaders) {
      this.x = x;
      this.beforeHeaders = beforeHeaders;
    }

    @Override public void sendResponseHeaders(int rCode, long responseLength) throws IOException {
      beforeHeaders.accept(rCode);
      x.sendResponseHeaders(rCode, responseLength);
    }

    @Override public Headers getRequestHeaders() { return x.getRequestHeaders(); }
    @Override public Headers getResponseHeaders() { return x.getResponseHeaders(); }
    @Override public URI getRequestURI() { return x.getRequestURI(); }
    @Override public String getRequestMethod() { return x.getRequestMethod(); }
    @Override public HttpContext getHttpContext() { return x.getHttpContext(); }
    @Override public void close() { x.close(); }
    @Override public InputStream getRequestBody() { return x.getRequestBody(); }
    @Override public OutputStream getResponseBody() { return x.getResponseBody(); }
    @Override public InetSocketAddress getRemoteAddress() { return x.getRemoteAddress(); }
    @Override public int getResponseCode() { return x.getResponseCode(); }
    @Override public InetSocketAddress getLocalAddress() { return x.getLocalAddress(); }
    @Override public String getProtocol() { return x.getProtocol(); }
    @Override public Object getAttribute(String name) { return x.getAttribute(name); }
    @Override public void setAttribute(String name, Object value) { x.setAttribute(name, value); }
    @Override public void setStreams(InputStream i, OutputStream o) { x.setStreams(i, o); }
    @Override public HttpPrincipal getPrincipal() { return x.getPrincipal(); }
  }

  /** {@link Completing} for an HTTPS exchange, which handlers may ask for its TLS session. */
  private static final class SecureCompleting extends HttpsExchange {
    private final HttpsExchange x;
    private final IntConsumer beforeHeaders;

    SecureCompleting(HttpsExchange x, IntConsumer beforeHeaders) {
      this.x = x;
      this.beforeHeaders = beforeHeaders;
    }

    @Override public void sendResponseHeaders(int rCode, long responseLength) throws IOException {
      beforeHeaders.accept(rCode);
      x.sendResponseHeaders(rCode, responseLength);
    }

    @Override public SSLSession getSSLSession() { return x.getSSLSession(); }
    @Override public Headers getRequestHeaders() { return x.getRequestHeaders(); }
    @Override public Headers getResponseHeaders() { return x.getResponseHeaders(); }
    @Override public URI getRequestURI() { return x.getRequestURI(); }
    @Override public String getRequestMethod() { return x.getRequestMethod(); }
    @Override public HttpContext getHttpContext() { return x.getHttpContext(); }
    @Override public void close() { x.close(); }
    @Override public InputStream getRequestBody() { return x.getRequestBody(); }
    @Override public OutputStream getResponseBody() { return x.getResponseBody(); }
    @Override public InetSocketAddress getRemoteAddress() { return x.getRemoteAddress(); }
    @Override public int getResponseCode() { return x.getResponseCode(); }
    @Override public InetSocketAddress getLocalAddress() { return x.getLocalAddress(); }
    @Override public String getProtocol() { return x.getProtocol(); }
    @Override public Object getAttribute(String name) { return x.getAttribute(name); }
    @Override public void setAttribute(String name, Object value) { x.setAttribute(name, value); }
    @Override public void setStreams(InputStream i, OutputStream o) { x.setStreams(i, o); }
    @Override public HttpPrincipal getPrincipal() { return x.getPrincipal(); }
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
