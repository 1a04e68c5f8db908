package dev.sluice.http;

import dev.sluice.internal.Checks;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.security.Principal;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import java.util.function.Function;

/**
 * A Jakarta Servlet (6.0+) filter that rate-limits requests as its {@link HttpRateLimit} says.
 * Requests that are not HTTP, and dispatches other than {@code REQUEST}, pass through. Asynchronous requests are completed (and, under the
 * skip options, refunded, or with a cost, settled) when their async cycle completes.
 *
 * <pre>{@code
 * FilterHolder holder = new FilterHolder(new RateLimitServletFilter(rateLimit));
 * context.addFilter(holder, "/api/*", EnumSet.of(DispatcherType.REQUEST));
 * }</pre>
 */
public final class RateLimitServletFilter implements Filter {
  private final HttpRateLimit rateLimit;

  public RateLimitServletFilter(HttpRateLimit rateLimit) {
    this.rateLimit = Checks.notNull("rateLimit", rateLimit);
  }

  @Override public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain) throws IOException, ServletException {
    // Only the original dispatch is charged: a forward, include, error page or async re-dispatch of
    // the same request (when the filter is mapped to those too) must not count it twice.
    if (!(req instanceof HttpServletRequest request) || !(res instanceof HttpServletResponse response)
        || req.getDispatcherType() != DispatcherType.REQUEST) {
      chain.doFilter(req, res);
      return;
    }
    Admission admission = rateLimit.admit(new View(request));
    if (!admission.verdict.allowed()) {
      refuse(response, admission.verdict);
      return;
    }
    admission.headers(response::setHeader);
    if (!admission.refundsPossible()) {
      chain.doFilter(request, response);
      return;
    }
    try {
      chain.doFilter(request, response);
    } catch (IOException | ServletException | RuntimeException | Error e) {
      admission.complete(true, -1, NO_USAGE);
      throw e;
    }
    Function<String, Object> usage = name -> {
      Object a = request.getAttribute(name);
      return a != null ? a : response.getHeader(name);
    };
    if (request.isAsyncStarted()) {
      request.getAsyncContext().addListener(new AsyncListener() {
        @Override public void onComplete(AsyncEvent event) {
          admission.complete(false, response.getStatus(), usage);
        }

        @Override public void onTimeout(AsyncEvent event) {
          admission.complete(true, -1, NO_USAGE);
        }

        @Override public void onError(AsyncEvent event) {
          admission.complete(true, -1, NO_USAGE);
        }

        @Override public void onStartAsync(AsyncEvent event) {
          event.getAsyncContext().addListener(this);
        }
      });
    } else {
      admission.complete(false, response.getStatus(), usage);
    }
  }

  private static final Function<String, Object> NO_USAGE = name -> null;
  /**
   * Answers a refused request with {@code verdict}: its status, headers and problem body (for a front
   * end of one's own, such as the Spring starter's, so that every servlet answer is written alike).
   */
  public static void refuse(HttpServletResponse response, HttpVerdict verdict) throws IOException {
    if (verdict.allowed()) {
      throw new IllegalArgumentException("the verdict allows the request; only a refusal is written as the answer");
    }
    response.setStatus(verdict.status());
    for (HttpVerdict.Header h : verdict.headers()) {
      response.setHeader(h.name(), h.value());
    }
    byte[] body = verdict.bodyBytes();
    response.setContentType(HttpVerdict.PROBLEM_JSON);
    response.setContentLength(body.length);
    response.getOutputStream().write(body);
  }

  /** {@code request} as the key resolvers see it (for a front end of one's own, such as the Spring starter's). */
  public static RequestView view(HttpServletRequest request) {
    return new View(Checks.notNull("request", request));
  }

  /** A servlet request as the key resolvers see it. */
  private static final class View implements RequestView {
    private final HttpServletRequest r;

    View(HttpServletRequest r) {
      this.r = r;
    }

    @Override public String remoteAddress() { return r.getRemoteAddr(); }

    @Override public String header(String name) { return r.getHeader(name); }

    @Override public List<String> headers(String name) {
      Enumeration<String> e = r.getHeaders(name);
      return e == null ? List.of() : Collections.list(e);
    }

    @Override public Principal principal() { return r.getUserPrincipal(); }

    @Override public String method() { return r.getMethod(); }

    @Override public String path() { return r.getRequestURI(); }
  }
}
