package dev.sluice.spring;

import dev.sluice.Decision;
import dev.sluice.http.HttpVerdict;
import dev.sluice.http.frontend.ServletAnswers;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * The Spring MVC front end of {@code sluice.http.rules}: charges a request to the first matching
 * rule's policy and answers a refusal with its {@link HttpVerdict} (429 or 503, headers, problem
 * body). Allowed requests carry the limit headers and, under skip-on-success / skip-on-failure, get
 * their permits back as {@code sluice-http} decides.
 */
public final class SluiceServletFilter extends OncePerRequestFilter {
  private final HttpRules rules;

  SluiceServletFilter(HttpRules rules) {
    this.rules = rules;
  }

  @Override protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
      throws ServletException, IOException {
    HttpRules.Rule rule = rules.match(request.getMethod(), request.getRequestURI().substring(request.getContextPath().length()));
    if (rule == null) {
      chain.doFilter(request, response);
      return;
    }
    Decision d = rule.limiter.tryAcquire(rule.keyOf(ServletAnswers.view(request)), rule.permits, rule.policy);
    HttpVerdict verdict = rule.verdict(d);
    if (!verdict.allowed()) {
      ServletAnswers.refuse(response, verdict);
      return;
    }
    for (HttpVerdict.Header h : verdict.headers()) {
      response.setHeader(h.name(), h.value());
    }
    if (!rule.refundsPossible()) {
      chain.doFilter(request, response);
      return;
    }
    try {
      chain.doFilter(request, response);
    } catch (IOException | ServletException | RuntimeException | Error e) {
      refund(rule, d, true, -1);
      throw e;
    }
    refund(rule, d, false, response.getStatus());
  }

  static void refund(HttpRules.Rule rule, Decision d, boolean threw, int status) {
    if (rule.rateLimit.refunds(threw, status)) {
      d.ticket().ifPresent(rule.limiter::refund);
    }
  }
}
