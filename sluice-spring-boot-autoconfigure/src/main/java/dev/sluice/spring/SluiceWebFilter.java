package dev.sluice.spring;

import dev.sluice.http.HttpVerdict;
import dev.sluice.http.RequestView;
import java.net.InetSocketAddress;
import java.security.Principal;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executor;
import org.springframework.core.Ordered;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.http.server.reactive.ServerHttpRequestDecorator;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.util.ClassUtils;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * The WebFlux front end of {@code sluice.http.rules}: the servlet filter's behaviour on the
 * limiters' async methods ({@code tryAcquireAsync}), so that no event-loop thread waits on a store.
 * A refund (skip-on-success / skip-on-failure) is a synchronous call and runs on the bounded-elastic
 * scheduler, never on the event loop, before the response is committed: the client never sees its
 * answer before the permit is back. On Reactor Netty the commit then goes on on the connection's own
 * event loop: continued from the bounded-elastic thread, about one response in ten thousand was never
 * written under load (the client timed out; Boot 4, Reactor Netty 1.3).
 */
public final class SluiceWebFilter implements WebFilter, Ordered {
  /**
   * The default order ({@code sluice.http.order}): early, before security's and the application's
   * own filters spend work on a request that is refused.
   */
  public static final int ORDER = Ordered.HIGHEST_PRECEDENCE + 10;

  private final HttpRules rules;
  private final int order;

  SluiceWebFilter(HttpRules rules, int order) {
    this.rules = rules;
    this.order = order;
  }

  @Override public int getOrder() {
    return order;
  }

  @Override public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
    ServerHttpRequest request = exchange.getRequest();
    List<HttpRules.Rule> candidates = rules.candidates(request.getMethod().name(), request.getPath().pathWithinApplication().value());
    if (candidates.isEmpty()) {
      return chain.filter(exchange);
    }
    return exchange.getPrincipal().map(Optional::of).defaultIfEmpty(Optional.empty()).flatMap(principal -> {
      View view = new View(request, principal.orElse(null));
      HttpRules.Plan plan = rules.plan(candidates, view, request.getQueryParams()::getFirst);
      if (plan == null) {
        return chain.filter(exchange);
      }
      Mono<HttpRules.Charged> charged;
      if (plan.single()) {
        var c = plan.charges().get(0);
        charged = Mono.fromCompletionStage(() -> c.limiter().tryAcquireAsync(c.key(), c.permits(), c.policy())).map(plan::charged);
      } else {
        // Several legs: the core's all-of charge, a synchronous call, never on the event loop.
        charged = offEventLoop(request, Mono.fromCallable(plan::acquire));
      }
      return charged.flatMap(ch -> {
        rules.record(ch, view, request.getQueryParams()::getFirst);
        return answer(exchange, chain, ch);
      });
    });
  }

  private static Mono<Void> answer(ServerWebExchange exchange, WebFilterChain chain, HttpRules.Charged charged) {
    HttpVerdict verdict = charged.verdict();
    ServerHttpResponse response = exchange.getResponse();
    if (!verdict.allowed()) {
      return refuse(response, charged.rule().response, verdict);
    }
    write(response, verdict);
    if (!charged.refundsPossible()) {
      return chain.filter(exchange);
    }
    // The refund runs before the response is committed, so a client that reads its answer and sends
    // the next request always finds the permit back; after the chain, it raced that next request.
    response.beforeCommit(() -> refund(exchange, charged, false, status(response)));
    return chain.filter(exchange)
        .onErrorResume(e -> refund(exchange, charged, true, -1).then(Mono.error(e))); // once per ticket: no double refund
  }

  /** The refusal {@code verdict}, as the verdict renders it ({@link #write}) or as the rule's response says. */
  private static Mono<Void> refuse(ServerHttpResponse response, RefusalResponse answer, HttpVerdict verdict) {
    if (answer.isVerdicts(verdict)) {
      return write(response, verdict);
    }
    for (HttpVerdict.Header h : answer.headers(verdict)) {
      response.getHeaders().set(h.name(), h.value());
    }
    response.setStatusCode(HttpStatusCode.valueOf(answer.status(verdict)));
    response.getHeaders().setContentType(MediaType.valueOf(answer.contentType(verdict)));
    byte[] body = answer.body(verdict);
    return response.writeWith(Mono.fromSupplier(() -> response.bufferFactory().wrap(body)));
  }

  /**
   * Writes {@code verdict} on {@code response}, the one reactive rendering of a verdict (this filter's
   * and the Spring Cloud Gateway filter's): its headers at once; for a refusal also its status and
   * RFC 9457 body, which the returned Mono writes. For an allowance only the headers are set and the
   * returned Mono is empty: the caller goes on with its chain.
   */
  public static Mono<Void> write(ServerHttpResponse response, HttpVerdict verdict) {
    for (HttpVerdict.Header h : verdict.headers()) {
      response.getHeaders().set(h.name(), h.value());
    }
    if (verdict.allowed()) {
      return Mono.empty();
    }
    response.setStatusCode(HttpStatusCode.valueOf(verdict.status()));
    response.getHeaders().setContentType(MediaType.valueOf(HttpVerdict.PROBLEM_JSON));
    return response.writeWith(Mono.fromSupplier(() -> response.bufferFactory().wrap(verdict.bodyBytes())));
  }

  /**
   * {@code work} (a synchronous store call: a refund, an all-of charge) on the bounded-elastic
   * scheduler, never on the event loop, and what follows back on {@code request}'s connection event
   * loop on Reactor Netty (see the class comment). Shared with the Spring Cloud Gateway filter.
   */
  public static <T> Mono<T> offEventLoop(ServerHttpRequest request, Mono<T> work) {
    Mono<T> r = work.subscribeOn(Schedulers.boundedElastic());
    Executor loop = EventLoop.of(request);
    return loop == null ? r : r.publishOn(Schedulers.fromExecutor(loop));
  }

  /** {@code request} as the key resolvers of {@code sluice-http} see it, with its {@code principal} (or null). */
  public static RequestView requestView(ServerHttpRequest request, Principal principal) {
    return new View(request, principal);
  }

  /** The request's Netty event loop on Reactor Netty, else null (the class is only loaded where Reactor Netty is). */
  private static final class EventLoop {
    private static final boolean NETTY = ClassUtils.isPresent("reactor.netty.Connection", SluiceWebFilter.class.getClassLoader());

    static Executor of(ServerHttpRequest request) {
      return NETTY ? OnNetty.loop(request) : null;
    }
  }

  private static final class OnNetty {
    static Executor loop(ServerHttpRequest request) {
      return ServerHttpRequestDecorator.getNativeRequest(request) instanceof reactor.netty.Connection c ? c.channel().eventLoop() : null;
    }
  }

  private static int status(ServerHttpResponse response) {
    HttpStatusCode s = response.getStatusCode();
    return s == null ? 200 : s.value();
  }

  /**
   * The refunds the rules ask for, if any, off the event loop (a refund is a synchronous store call),
   * and then back on the connection's event loop on Reactor Netty: what follows (the commit) must
   * not go on from the refund's thread. The conditions are read on the event loop (they read the
   * response, no store); no refund due: nothing is scheduled.
   */
  private static Mono<Void> refund(ServerWebExchange exchange, HttpRules.Charged charged, boolean threw, int status) {
    Runnable due = charged.refunds(threw, status, exchange.getResponse().getHeaders()::getFirst);
    return due == null ? Mono.empty() : offEventLoop(exchange.getRequest(), Mono.fromRunnable(due).then());
  }

  /** A reactive request as the key resolvers see it. */
  private static final class View implements RequestView {
    private final ServerHttpRequest r;
    private final Principal principal;

    View(ServerHttpRequest r, Principal principal) {
      this.r = r;
      this.principal = principal;
    }

    @Override public String remoteAddress() {
      InetSocketAddress a = r.getRemoteAddress();
      return a == null || a.getAddress() == null ? null : a.getAddress().getHostAddress();
    }

    @Override public String header(String name) { return r.getHeaders().getFirst(name); }

    @Override public List<String> headers(String name) {
      List<String> v = r.getHeaders().get(name);
      return v == null ? List.of() : v;
    }

    @Override public Principal principal() { return principal; }

    @Override public String method() { return r.getMethod().name(); }

    @Override public String path() { return r.getPath().value(); }
  }
}
