package dev.sluice.http.frontend;

import dev.sluice.http.HttpVerdict;
import dev.sluice.http.RequestView;
import dev.sluice.kernel.Inputs;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.security.Principal;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;

/**
 * What a servlet front end of Sluice's own (the {@code RateLimitServletFilter}, the Spring starter's
 * filter, the servlet gateway's filter) needs from {@code sluice-http} and a user does not: a servlet request as the key resolvers
 * see it, and a refusal written as its verdict says. Exported only to those modules: not API.
 */
public final class ServletAnswers {
  private ServletAnswers() {}

  /** {@code request} as the key resolvers see it. */
  public static RequestView view(HttpServletRequest request) {
    return new View(Inputs.notNull("request", request));
  }

  /** Answers a refused request with {@code verdict}: its status, headers and problem body. */
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
