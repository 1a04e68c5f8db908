package dev.sluice.quarkus;

import dev.sluice.Decision;
import dev.sluice.Ticket;
import dev.sluice.http.HttpVerdict;
import dev.sluice.http.RequestView;
import io.quarkus.vertx.http.runtime.filters.Filters;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.net.SocketAddress;
import io.vertx.ext.web.RoutingContext;
import jakarta.enterprise.event.Observes;
import org.eclipse.microprofile.config.Config;
import org.eclipse.microprofile.config.ConfigProvider;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import java.security.Principal;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The HTTP front end of {@code sluice.http.rules}: a Vert.x route filter, ahead of Quarkus REST and
 * every other route, that charges the first matching rule's policy on the limiter's async method (no
 * event-loop thread waits on a Redis round trip) and answers a refusal with {@link HttpVerdict}'s
 * status, headers and RFC 9457 body; an allowed request goes on with the limit headers set.
 * Quarkus's own endpoints under the non-application root ({@code /q/...}: health, metrics) are never
 * charged, whatever the rules say.
 */
@Singleton
public class SluiceRouteFilter {
  /** The filter's priority among Vert.x filters (higher runs first): before the application's own. */
  public static final int PRIORITY = 1000;

  private final Sluice sluice;
  /** Quarkus's own endpoints ({@code /q/health}, ...): never charged, so a probe is never refused. */
  private final String nonApplication;
  /** The memory store decides and refunds on the caller's thread without waiting on anything. */
  private final boolean inMemory;

  @Inject
  SluiceRouteFilter(Sluice sluice) {
    this.sluice = sluice;
    this.inMemory = "memory".equals(sluice.store().name());
    Config config = ConfigProvider.getConfig();
    String root = config.getOptionalValue("quarkus.http.root-path", String.class).orElse("/");
    String q = config.getOptionalValue("quarkus.http.non-application-root-path", String.class).orElse("q");
    String path = q.startsWith("/") ? q : (root.endsWith("/") ? root : root + "/") + q;
    this.nonApplication = path.endsWith("/") ? path : path + "/";
  }

  void register(@Observes Filters filters) {
    if (sluice.rules().size() > 0) {
      filters.register(this::filter, PRIORITY);
    }
  }

  void filter(RoutingContext rc) {
    HttpServerRequest request = rc.request();
    String path = request.path();
    if (path == null || path.startsWith(nonApplication) || (path + "/").equals(nonApplication)) {
      rc.next();
      return;
    }
    HttpRules.Rule rule = sluice.rules().match(request.method().name(), path);
    if (rule == null) {
      rc.next();
      return;
    }
    String key = rule.keyOf(new View(request));
    CompletableFuture<Decision> f = rule.limiter.tryAcquireAsync(key, rule.permits, rule.policy).toCompletableFuture();
    if (f.isDone()) { // the memory store decides on the caller's thread
      answer(rc, rule, f.join());
      return;
    }
    Context context = Vertx.currentContext();
    f.whenComplete((d, e) -> {
      Decision decision = d;
      if (context == null) {
        answer(rc, rule, decision, e);
      } else {
        context.runOnContext(v -> answer(rc, rule, decision, e));
      }
    });
  }

  private void answer(RoutingContext rc, HttpRules.Rule rule, Decision d, Throwable e) {
    if (e != null) { // a limiter never fails for store trouble: this is a bug, not an outage
      rc.fail(e);
      return;
    }
    answer(rc, rule, d);
  }

  private void answer(RoutingContext rc, HttpRules.Rule rule, Decision d) {
    HttpVerdict verdict = rule.verdict(d);
    Responses.write(verdict, rc.response());
    if (verdict.allowed()) {
      refundAfter(rc, rule, d);
      rc.next();
    }
  }

  /**
   * Under {@code skip-on-success} / {@code skip-on-failure}, the kernel's {@code RefundRule} applied
   * when the response has ended: a route that failed counts as a throw, else the status sent (unknown
   * when the connection closed first). A refund is a synchronous store call: on the memory store it
   * runs on the spot, on a shared store on a Vert.x worker, never on the event loop.
   */
  private void refundAfter(RoutingContext rc, HttpRules.Rule rule, Decision d) {
    if (!rule.refundsPossible() || d.ticket().isEmpty()) {
      return;
    }
    Ticket ticket = d.ticket().get();
    rc.addEndHandler(ended -> {
      boolean threw = rc.failure() != null;
      int status = ended.succeeded() ? rc.response().getStatusCode() : -1;
      if (!rule.rateLimit.refunds(threw, status)) {
        return;
      }
      if (inMemory) {
        rule.limiter.refund(ticket);
      } else {
        rc.vertx().executeBlocking(() -> rule.limiter.refund(ticket), false);
      }
    });
  }

  /** A Vert.x request as the key resolvers see it. */
  private static final class View implements RequestView {
    private final HttpServerRequest r;

    View(HttpServerRequest r) {
      this.r = r;
    }

    @Override public String remoteAddress() {
      SocketAddress a = r.remoteAddress();
      return a == null ? null : a.hostAddress();
    }

    @Override public String header(String name) { return r.getHeader(name); }

    @Override public List<String> headers(String name) { return r.headers().getAll(name); }

    @Override public Principal principal() { return null; }

    @Override public String method() { return r.method().name(); }

    @Override public String path() { return r.path(); }
  }
}
