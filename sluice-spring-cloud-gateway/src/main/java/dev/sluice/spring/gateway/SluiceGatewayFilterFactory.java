package dev.sluice.spring.gateway;

import dev.sluice.Decision;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.compose.AllOf;
import dev.sluice.http.HttpRateLimit;
import dev.sluice.http.HttpVerdict;
import dev.sluice.http.KeyResolver;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.http.TrustedProxies;
import dev.sluice.kernel.HeaderFamily;
import dev.sluice.spring.RateLimiterRegistry;
import dev.sluice.spring.SluiceProperties;
import dev.sluice.spring.SluiceWebFilter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.cloud.gateway.filter.GatewayFilter;
import org.springframework.cloud.gateway.filter.GatewayFilterChain;
import org.springframework.cloud.gateway.filter.factory.AbstractGatewayFilterFactory;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.expression.spel.support.StandardEvaluationContext;
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
  private static final System.Logger LOG = System.getLogger(SluiceGatewayFilterFactory.class.getName());

  private final RateLimiterRegistry registry;
  private final BeanFactory beans;
  private final KeyResolver address;
  private final SpelExpressionParser parser = new SpelExpressionParser();

  public SluiceGatewayFilterFactory(RateLimiterRegistry registry, SluiceProperties props, BeanFactory beans) {
    super(Config.class);
    this.registry = registry;
    this.beans = beans;
    List<String> proxies = props.getHttp().getTrustedProxies();
    this.address = KeyResolver.forwardedFor(proxies.isEmpty() ? TrustedProxies.none() : TrustedProxies.of(proxies));
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

  /** One route's compiled filter. */
  private final class Route implements GatewayFilter {
    private final List<RateLimiter> limiters = new ArrayList<>();
    private final long permits;
    private final RateLimitHeaders families;
    /** The clock of every verdict: the first limiter's, as HttpRateLimit chooses it for the HTTP filters. */
    private final Ticker ticker;
    private final RefundOn refundOn;
    private final Function<ServerWebExchange, Mono<String>> key;
    /** AllOf.charge is synchronous: off the event loop unless every leg is in this process. */
    private final boolean offLoop;
    private final String where;

    Route(Config c) {
      this.where = "Sluice filter " + c.getPolicies();
      if (c.getPolicies() == null || c.getPolicies().isEmpty()) {
        throw new IllegalArgumentException("the Sluice filter names no policy; name one or more of sluice.policies "
            + registry.limiters().keySet());
      }
      for (String p : c.getPolicies()) {
        RateLimiter l = registry.limiter(p == null ? null : p.strip());
        if (limiters.contains(l)) {
          throw new IllegalArgumentException(where + " names policy '" + p.strip() + "' twice");
        }
        limiters.add(l);
      }
      if (c.getPermits() < 1) {
        throw new IllegalArgumentException(where + ": permits is " + c.getPermits() + "; a request costs at least 1 permit");
      }
      this.permits = c.getPermits();
      HeaderFamily f = HeaderFamily.union(c.getHeaders() == null ? List.of() : c.getHeaders());
      this.families = RateLimitHeaders.of(f.ietf(), f.legacy());
      this.ticker = HttpRateLimit.builder(limiters.get(0)).build().ticker();
      this.refundOn = RefundOn.parse(where + ": refund-on", c.getRefundOn());
      this.key = keyOf(c);
      this.offLoop = limiters.size() > 1 && !"memory".equals(registry.store());
    }

    private Function<ServerWebExchange, Mono<String>> keyOf(Config c) {
      Object r = c.getKeyResolver();
      if (r instanceof String name && !name.isBlank()) {
        r = beans.getBean(name.strip().replaceFirst("^#\\{@(.*)}$", "$1"),
            org.springframework.cloud.gateway.filter.ratelimit.KeyResolver.class);
      }
      if (r instanceof org.springframework.cloud.gateway.filter.ratelimit.KeyResolver resolver) {
        if (c.getKey() != null && !c.getKey().isBlank()) {
          throw new IllegalArgumentException(where + " has both key-resolver and key; give one");
        }
        return exchange -> resolver.resolve(exchange).map(HttpRateLimit::normalize).defaultIfEmpty(KeyResolver.UNKNOWN);
      }
      if (r != null && !(r instanceof String)) {
        throw new IllegalArgumentException(where + ": key-resolver is a " + r.getClass().getName()
            + ", not a gateway KeyResolver");
      }
      if (c.getKey() != null && !c.getKey().isBlank()) {
        Expression e;
        try {
          e = parser.parseExpression(c.getKey());
        } catch (ParseException x) {
          throw new IllegalArgumentException(where + ": key '" + c.getKey() + "' is not a SpEL expression: " + x.getMessage(), x);
        }
        BeanFactoryResolver resolver = new BeanFactoryResolver(beans);
        AtomicBoolean warned = new AtomicBoolean();
        return exchange -> Mono.just(HttpRateLimit.normalize(evaluate(e, resolver, exchange, warned)));
      }
      return exchange -> Mono.just(HttpRateLimit.normalize(address.resolve(SluiceWebFilter.requestView(exchange.getRequest(), null))));
    }

    private String evaluate(Expression e, BeanFactoryResolver resolver, ServerWebExchange exchange, AtomicBoolean warned) {
      try {
        StandardEvaluationContext ctx = new StandardEvaluationContext(exchange);
        ctx.setBeanResolver(resolver);
        Object v = e.getValue(ctx);
        return v == null ? null : v.toString();
      } catch (RuntimeException x) {
        // As the starter's rules: a failing expression is no way around the limit, nor an error page.
        if (warned.compareAndSet(false, true)) {
          LOG.log(System.Logger.Level.WARNING, where + ": key failed on a request (" + x + "); such requests are charged to the key '"
              + KeyResolver.UNKNOWN + "'", x);
        }
        return null;
      }
    }

    @Override public Mono<Void> filter(ServerWebExchange exchange, GatewayFilterChain chain) {
      return key.apply(exchange).flatMap(k -> charge(exchange, k)).flatMap(charged -> answer(exchange, chain, charged));
    }

    /** The decision on {@code k} and, when allowed, how to give it back. */
    private Mono<Charged> charge(ServerWebExchange exchange, String k) {
      if (limiters.size() == 1) {
        RateLimiter l = limiters.get(0);
        return Mono.fromCompletionStage(() -> l.tryAcquireAsync(k, permits, l.policy()))
            .map(d -> new Charged(d, () -> d.ticket().ifPresent(l::refund)));
      }
      List<AllOf.Charge> charges = new ArrayList<>(limiters.size());
      for (RateLimiter l : limiters) {
        charges.add(AllOf.Charge.of(l, k, permits));
      }
      Mono<Charged> all = Mono.fromSupplier(() -> {
        AllOf.Result r = AllOf.charge(charges);
        return new Charged(r.decision(), r::refund);
      });
      return offLoop ? SluiceWebFilter.offEventLoop(exchange.getRequest(), all) : all;
    }

    private Mono<Void> answer(ServerWebExchange exchange, GatewayFilterChain chain, Charged c) {
      HttpVerdict verdict = HttpVerdict.of(c.decision, ticker.nowMicros(), families);
      ServerHttpResponse response = exchange.getResponse();
      Mono<Void> refusal = SluiceWebFilter.write(response, verdict);
      if (!verdict.allowed() || refundOn.never()) {
        return verdict.allowed() ? chain.filter(exchange) : refusal;
      }
      // Before the commit, as the WebFlux filter: a client that reads its answer finds the permits back.
      response.beforeCommit(() -> refund(exchange, c, false, status(response)));
      return chain.filter(exchange).onErrorResume(e -> refund(exchange, c, true, -1).then(Mono.error(e)));
    }

    private Mono<Void> refund(ServerWebExchange exchange, Charged c, boolean threw, int status) {
      if (!refundOn.refunds(threw, status) || !c.claim()) {
        return Mono.empty();
      }
      return SluiceWebFilter.offEventLoop(exchange.getRequest(), Mono.fromRunnable(c.refund).then());
    }
  }

  private static int status(ServerHttpResponse response) {
    HttpStatusCode s = response.getStatusCode();
    return s == null ? 200 : s.value();
  }

  /** A request's decision and the refund of everything it charged, given at most once. */
  private static final class Charged {
    final Decision decision;
    final Runnable refund;
    private final AtomicBoolean spent = new AtomicBoolean();

    Charged(Decision decision, Runnable refund) {
      this.decision = decision;
      this.refund = refund;
    }

    boolean claim() {
      return decision.allowed() && !spent.getAndSet(true);
    }
  }
}
