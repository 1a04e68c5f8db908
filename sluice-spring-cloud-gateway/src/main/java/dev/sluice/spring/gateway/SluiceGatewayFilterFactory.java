package dev.sluice.spring.gateway;

import dev.sluice.compose.AllOf;
import dev.sluice.http.HttpRateLimit;
import dev.sluice.http.HttpVerdict;
import dev.sluice.http.KeyResolver;
import dev.sluice.kernel.HeaderFamily;
import dev.sluice.spring.RateLimiterRegistry;
import dev.sluice.spring.SluiceProperties;
import dev.sluice.spring.SluiceWebFilter;
import dev.sluice.spring.gateway.RouteCharge.Charged;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.cloud.gateway.filter.GatewayFilter;
import org.springframework.cloud.gateway.filter.GatewayFilterChain;
import org.springframework.cloud.gateway.filter.factory.AbstractGatewayFilterFactory;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * The {@code Sluice} route filter: charges a request to one or several policies of
 * {@code sluice.policies}, all or none ({@link AllOf}), and answers a refusal with Sluice's own
 * verdict (the 429 or 503, headers and RFC 9457 body of every front end, written by
 * {@link SluiceWebFilter#write}).
 *
 * <pre>{@code
 * filters:
 *   - Sluice=per-second,per-hour            # shortcut: the policies; key: the client address
 *   - name: Sluice                          # full form
 *     args:
 *       policies: per-second,per-hour
 *       key-resolver: "#{@apiKeyResolver}"  # a gateway KeyResolver bean (or its name), or
 *       key: "request.headers.getFirst('X-Api-Key')"   # a SpEL expression over the exchange
 *       refund-on: 5xx                      # failure, success, a status or a class of them
 *       permits: 1
 *       headers: ietf,legacy
 * }</pre>
 *
 * <p>The key is the resolver's, else the expression's, else the client address through
 * {@code sluice.http.trusted-proxies} ({@code ip:203.0.113.7}, {@link KeyResolver#forwardedFor}); a
 * missing or blank key is charged to the shared key {@code unknown}, a long one is hashed
 * ({@link HttpRateLimit#normalize}). One policy is charged on the limiter's async path: no thread
 * waits on the store. Several are charged by {@link AllOf#charge}, which is synchronous: in the
 * process (the memory store) it runs where the request is, on a shared store on the bounded-elastic
 * scheduler, never on an event loop. A refund (the route's {@code refund-on}) runs off the event
 * loop before the response is committed, as the WebFlux filter's.
 */
public class SluiceGatewayFilterFactory extends AbstractGatewayFilterFactory<SluiceGatewayFilterFactory.Config> {
  private final RateLimiterRegistry registry;
  private final BeanFactory beans;
  private final KeyResolver address;

  public SluiceGatewayFilterFactory(RateLimiterRegistry registry, SluiceProperties props, BeanFactory beans) {
    super(Config.class);
    this.registry = registry;
    this.beans = beans;
    this.address = RouteCharge.clientAddress(props);
  }

  /** Most policies the shortcut form names ({@code - Sluice=a,b,...}); the full form has no such limit. */
  static final int SHORTCUT_POLICIES = 16;
  private static final List<String> SHORTCUT_FIELDS = java.util.stream.IntStream.range(0, SHORTCUT_POLICIES)
      .mapToObj(i -> "policies[" + i + "]").toList();

  /**
   * The shortcut's values are the policies: {@code policies[0]}, {@code policies[1]}, ... (the
   * gateway's DEFAULT shortcut, which names only the generated keys of the shortcut form). Its
   * GATHER_LIST would gather the full form's other arguments into the list too.
   */
  @Override public List<String> shortcutFieldOrder() {
    return SHORTCUT_FIELDS;
  }

  @Override public GatewayFilter apply(Config config) {
    return new Route(config);
  }

  /** A route's settings: the {@code args:} of the full form, or {@code new Config().setPolicies(...)} in the Java DSL. */
  public static class Config {
    private List<String> policies = new ArrayList<>();
    private Object keyResolver;
    private String key;
    private List<String> refundOn = new ArrayList<>();
    private long permits = 1;
    private List<HeaderFamily> headers = new ArrayList<>(List.of(HeaderFamily.IETF, HeaderFamily.LEGACY));

    /** The policies of {@code sluice.policies} a request is charged to, all or none. */
    public List<String> getPolicies() { return policies; }

    public Config setPolicies(List<String> policies) {
      this.policies = policies;
      return this;
    }

    /** The same, as names. */
    public Config setPolicies(String... policies) {
      return setPolicies(List.of(policies));
    }

    /** A gateway {@code KeyResolver}, or the name of such a bean; null for none. */
    public Object getKeyResolver() { return keyResolver; }

    public Config setKeyResolver(Object keyResolver) {
      this.keyResolver = keyResolver;
      return this;
    }

    /** A SpEL expression over the {@code ServerWebExchange} (its root object) giving the key; beans as {@code @name}. */
    public String getKey() { return key; }

    public Config setKey(String key) {
      this.key = key;
      return this;
    }

    /** The downstream outcomes after which the charge is given back: failure, success, 503, 4xx; empty for none. */
    public List<String> getRefundOn() { return refundOn; }

    public Config setRefundOn(List<String> refundOn) {
      this.refundOn = refundOn;
      return this;
    }

    /** Permits a request costs under every policy. */
    public long getPermits() { return permits; }

    public Config setPermits(long permits) {
      this.permits = permits;
      return this;
    }

    /** The limit header families to send: ietf, legacy, all, none (a list is their union); Retry-After always. */
    public List<HeaderFamily> getHeaders() { return headers; }

    public Config setHeaders(List<HeaderFamily> headers) {
      this.headers = headers;
      return this;
    }
  }

  /** One route's compiled filter: the route's {@link RouteCharge} and the reactive server's way of waiting and writing. */
  private final class Route implements GatewayFilter {
    private final RouteCharge route;
    private final Function<ServerWebExchange, Mono<String>> key;

    Route(Config c) {
      this.route = new RouteCharge(registry, RouteCharge.Settings.of(c.getPolicies(), c.getPermits(), c.getHeaders(), c.getRefundOn()));
      this.key = keyOf(c);
    }

    private Function<ServerWebExchange, Mono<String>> keyOf(Config c) {
      Object r = c.getKeyResolver();
      if (r instanceof String name && !name.isBlank()) {
        r = beans.getBean(RouteCharge.beanName(name), org.springframework.cloud.gateway.filter.ratelimit.KeyResolver.class);
      }
      if (r instanceof org.springframework.cloud.gateway.filter.ratelimit.KeyResolver resolver) {
        RouteCharge.oneKeySource(route.where, true, c.getKey());
        return exchange -> resolver.resolve(exchange).map(HttpRateLimit::normalize).defaultIfEmpty(KeyResolver.UNKNOWN);
      }
      if (r != null && !(r instanceof String)) {
        throw new IllegalArgumentException(route.where + ": key-resolver is a " + r.getClass().getName()
            + ", not a gateway KeyResolver");
      }
      if (c.getKey() != null && !c.getKey().isBlank()) {
        KeyExpression e = KeyExpression.parse(route.where, c.getKey(), beans);
        return exchange -> Mono.just(HttpRateLimit.normalize(e.evaluate(exchange)));
      }
      return exchange -> Mono.just(HttpRateLimit.normalize(address.resolve(SluiceWebFilter.requestView(exchange.getRequest(), null))));
    }

    @Override public Mono<Void> filter(ServerWebExchange exchange, GatewayFilterChain chain) {
      return key.apply(exchange).flatMap(k -> charge(exchange, k)).flatMap(charged -> answer(exchange, chain, charged));
    }

    /** The decision on {@code k} and, when allowed, how to give it back. */
    private Mono<Charged> charge(ServerWebExchange exchange, String k) {
      if (route.single()) {
        return Mono.fromCompletionStage(() -> route.chargeAsync(k));
      }
      Mono<Charged> all = Mono.fromSupplier(() -> route.charge(k));
      return route.waitsOnStore() ? SluiceWebFilter.offEventLoop(exchange.getRequest(), all) : all;
    }

    private Mono<Void> answer(ServerWebExchange exchange, GatewayFilterChain chain, Charged c) {
      HttpVerdict verdict = route.verdict(c.decision);
      ServerHttpResponse response = exchange.getResponse();
      Mono<Void> written = SluiceWebFilter.write(response, verdict); // allowed: the limit headers, set now
      if (!verdict.allowed()) {
        return written;
      }
      if (route.neverRefunds()) {
        return chain.filter(exchange);
      }
      // Before the commit, as the WebFlux filter: a client that reads its answer finds the permits back.
      response.beforeCommit(() -> refund(exchange, c, false, status(response)));
      return chain.filter(exchange).onErrorResume(e -> refund(exchange, c, true, -1).then(Mono.error(e)));
    }

    private Mono<Void> refund(ServerWebExchange exchange, Charged c, boolean threw, int status) {
      if (!route.refunds(threw, status) || !c.claim()) {
        return Mono.empty();
      }
      return SluiceWebFilter.offEventLoop(exchange.getRequest(), Mono.fromRunnable(c::refund).then());
    }
  }

  private static int status(ServerHttpResponse response) {
    HttpStatusCode s = response.getStatusCode();
    return s == null ? 200 : s.value();
  }
}
