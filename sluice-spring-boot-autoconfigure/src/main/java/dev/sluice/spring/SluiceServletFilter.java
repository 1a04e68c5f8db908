package dev.sluice.spring;

import dev.sluice.http.HttpVerdict;
import dev.sluice.http.RequestView;
import dev.sluice.http.frontend.ServletAnswers;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.List;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * The Spring MVC front end of {@code sluice.http.rules}: charges a request as the rules' plan says
 * (the first matching rule, or every one under strategy all; each of a rule's policies, all or
 * nothing) and answers a refusal with its {@link HttpVerdict} (429 or 503, headers, problem body),
 * or the rule's configured response for a 429. Allowed requests carry the limit headers and, under
 * skip-on-success / skip-on-failure / refund-condition, get their permits back after the handler.
 */
public final class SluiceServletFilter extends OncePerRequestFilter {
  private final HttpRules rules;

  SluiceServletFilter(HttpRules rules) {
    this.rules = rules;
  }

  @Override protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
      throws ServletException, IOException {
    List<HttpRules.Rule> candidates = rules.candidates(request.getMethod(), request.getRequestURI().substring(request.getContextPath().length()));
    if (candidates.isEmpty()) {
      chain.doFilter(request, response);
      return;
    }
    RequestView view = ServletAnswers.view(request);
    HttpRules.Plan plan = rules.plan(candidates, view, request::getParameter);
    if (plan == null) {
      chain.doFilter(request, response);
      return;
    }
    HttpRules.Charged charged = plan.acquire();
    rules.record(charged, view, request::getParameter);
    HttpVerdict verdict = charged.verdict();
    if (!verdict.allowed()) {
      refuse(response, charged.rule().response, verdict);
      return;
    }
    for (HttpVerdict.Header h : verdict.headers()) {
      response.setHeader(h.name(), h.value());
    }
    if (!charged.refundsPossible()) {
      chain.doFilter(request, response);
      return;
    }
    try {
      chain.doFilter(request, response);
    } catch (IOException | ServletException | RuntimeException | Error e) {
      charged.refund(true, -1, response::getHeader);
      throw e;
    }
    charged.refund(false, response.getStatus(), response::getHeader);
  }

  /** The refusal {@code verdict}, as the verdict renders it or as the rule's response says. */
  private static void refuse(HttpServletResponse response, RefusalResponse answer, HttpVerdict verdict) throws IOException {
    if (answer.isVerdicts(verdict)) {
      ServletAnswers.refuse(response, verdict);
      return;
    }
    response.setStatus(answer.status(verdict));
    for (HttpVerdict.Header h : answer.headers(verdict)) {
      response.setHeader(h.name(), h.value());
    }
    byte[] body = answer.body(verdict);
    response.setContentType(answer.contentType(verdict));
    response.setContentLength(body.length);
    response.getOutputStream().write(body);
  }
}
