package dev.sluice.spring.gateway;

import dev.sluice.Decision;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.compose.AllOf;
import dev.sluice.http.HttpRateLimit;
import dev.sluice.http.HttpVerdict;
import dev.sluice.http.KeyResolver;
import dev.sluice.http.TrustedProxies;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.kernel.HeaderFamily;
import dev.sluice.spring.RateLimiterRegistry;
import dev.sluice.spring.SluiceProperties;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One route's {@code Sluice} filter settings, checked and compiled once: the limiters of its policies,
 * the permits a request costs, the header families, the clock of its verdicts and its refunds. The
 * one place both gateways' filters (the reactive {@link SluiceGatewayFilterFactory}, the servlet
 * {@link SluiceFilterFunctions}) read a route's settings and charge a request; each adds only its
 * server's way of waiting and writing.
 */
final class RouteCharge {
  /** How the route is named in messages: {@code Sluice filter [a, b]}. */
  final String where;
  private final List<RateLimiter> limiters = new ArrayList<>();
  private final long permits;
  private final RateLimitHeaders families;
  /** The clock of every verdict: the first limiter's, as HttpRateLimit chooses it for the HTTP filters. */
  private final Ticker ticker;
  private final RefundOn refundOn;
  /** Several policies on a shared store: AllOf.charge is synchronous and waits on the store. */
  private final boolean waitsOnStore;

  /**
   * A route's settings as configuration gives them, checked without the application (a servlet
   * gateway builds its filters before it can reach the application): everything but whether the
   * policies exist.
   */
  record Settings(String where, List<String> policies, long permits, RateLimitHeaders families, RefundOn refundOn) {
    static Settings of(List<String> policies, long permits, List<HeaderFamily> headers, List<String> refundOn) {
      if (policies == null || policies.isEmpty()) {
        throw new IllegalArgumentException("the Sluice filter names no policy; name one or more of sluice.policies");
      }
      String where = RouteCharge.where(policies);
      List<String> names = new ArrayList<>(policies.size());
      for (String p : policies) {
        String n = p == null ? null : p.strip();
        if (n != null && names.contains(n)) {
          throw new IllegalArgumentException(where + " names policy '" + n + "' twice");
        }
        names.add(n);
      }
      if (permits < 1) {
        throw new IllegalArgumentException(where + ": permits is " + permits + "; a request costs at least 1 permit");
      }
      HeaderFamily f = HeaderFamily.union(headers == null ? List.of() : headers);
      return new Settings(where, List.copyOf(names.stream().map(n -> n == null ? "" : n).toList()), permits,
          RateLimitHeaders.of(f.ietf(), f.legacy()), RefundOn.parse(where + ": refund-on", refundOn));
    }
  }

  /** How a route of {@code policies} is named in messages: {@code Sluice filter [a, b]}. */
  static String where(List<String> policies) {
    return "Sluice filter " + policies;
  }

  /** {@code s} on the limiters of {@code registry}; a policy that is not there is refused with the policies that are. */
  RouteCharge(RateLimiterRegistry registry, Settings s) {
    this.where = s.where();
    for (String p : s.policies()) {
      limiters.add(registry.limiter(p));
    }
    this.permits = s.permits();
    this.families = s.families();
    this.ticker = HttpRateLimit.builder(limiters.get(0)).build().ticker();
    this.refundOn = s.refundOn();
    this.waitsOnStore = limiters.size() > 1 && !"memory".equals(registry.store());
  }

  /** A gateway route's {@code key-resolver} given as a bean: {@code "#{@name}"} or {@code name}. */
  static String beanName(String reference) {
    return reference.strip().replaceFirst("^#\\{@(.*)}$", "$1");
  }

  /** The key of a route that names none: the client address, through {@code sluice.http.trusted-proxies}. */
  static KeyResolver clientAddress(SluiceProperties props) {
    List<String> proxies = props.getHttp().getTrustedProxies();
    return KeyResolver.forwardedFor(proxies.isEmpty() ? TrustedProxies.none() : TrustedProxies.of(proxies));
  }

  /** The one check of a route's key settings: a resolver or an expression, not both. */
  static void oneKeySource(String where, boolean resolver, String expression) {
    if (resolver && expression != null && !expression.isBlank()) {
      throw new IllegalArgumentException(where + " has both key-resolver and key; give one");
    }
  }

  /** True when one limiter decides: {@link #chargeAsync} holds no thread. */
  boolean single() {
    return limiters.size() == 1;
  }

  /** True when {@link #charge} waits on a shared store (several policies off the memory store). */
  boolean waitsOnStore() {
    return waitsOnStore;
  }

  /** The one limiter's decision on {@code key} on its async path; only when {@link #single}. */
  CompletionStage<Charged> chargeAsync(String key) {
    RateLimiter l = limiters.get(0);
    return l.tryAcquireAsync(key, permits, l.policy()).thenApply(d -> new Charged(d, () -> d.ticket().ifPresent(l::refund)));
  }

  /** The decision on {@code key} under every policy, all or none ({@link AllOf#charge}); synchronous. */
  Charged charge(String key) {
    if (single()) {
      RateLimiter l = limiters.get(0);
      Decision d = l.tryAcquire(key, permits, l.policy());
      return new Charged(d, () -> d.ticket().ifPresent(l::refund));
    }
    List<AllOf.Charge> charges = new ArrayList<>(limiters.size());
    for (RateLimiter l : limiters) {
      charges.add(AllOf.Charge.of(l, key, permits));
    }
    AllOf.Result r = AllOf.charge(charges);
    return new Charged(r.decision(), r::refund);
  }

  /** What the client is told about {@code d}: Sluice's one verdict. */
  HttpVerdict verdict(Decision d) {
    return HttpVerdict.of(d, ticker.nowMicros(), families);
  }

  /** True when nothing is ever refunded: no need to watch the response. */
  boolean neverRefunds() {
    return refundOn.never();
  }

  /** Whether a request whose downstream threw ({@code threw}) or answered {@code status} gets its charge back. */
  boolean refunds(boolean threw, int status) {
    return refundOn.refunds(threw, status);
  }

  /** A request's decision and the refund of everything it charged, given at most once. */
  static final class Charged {
    final Decision decision;
    private final Runnable refund;
    private final AtomicBoolean spent = new AtomicBoolean();

    Charged(Decision decision, Runnable refund) {
      this.decision = decision;
      this.refund = refund;
    }

    /** True once for an allowed decision: the caller then gives the charge back ({@link #refund}). */
    boolean claim() {
      return decision.allowed() && !spent.getAndSet(true);
    }

    void refund() {
      refund.run();
    }
  }
}
