package dev.sluice.http;

import dev.sluice.http.frontend.ServletAnswers;
import dev.sluice.kernel.Inputs;
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
    this.rateLimit = Inputs.notNull("rateLimit", rateLimit);
  }

  @Override public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain) throws IOException, ServletException {
    // Only the original dispatch is charged: a forward, include, error page or async re-dispatch of
    // the same request (when the filter is mapped to those too) must not count it twice.
    if (!(req instanceof HttpServletRequest request) || !(res instanceof HttpServletResponse response)
        || req.getDispatcherType() != DispatcherType.REQUEST) {
      chain.doFilter(req, res);
      return;
    }
    Admission admission = rateLimit.admit(ServletAnswers.view(request));
    if (!admission.verdict.allowed()) {
      ServletAnswers.refuse(response, admission.verdict);
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
}
