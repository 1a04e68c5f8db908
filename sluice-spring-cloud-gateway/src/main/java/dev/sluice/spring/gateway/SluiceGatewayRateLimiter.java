package dev.sluice.spring.gateway;

import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.http.HttpRateLimit;
import dev.sluice.http.HttpVerdict;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.kernel.HeaderFamily;
import dev.sluice.spring.RateLimiterRegistry;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.cloud.gateway.filter.ratelimit.AbstractRateLimiter;
import org.springframework.cloud.gateway.support.ConfigurationService;
import reactor.core.publisher.Mono;

/**
 * Sluice behind the gateway's own {@code RequestRateLimiter} filter: the bean {@code sluiceRateLimiter}.
 *
 * <pre>{@code
 * filters:
 *   - name: RequestRateLimiter
 *     args:
 *       rate-limiter: "#{@sluiceRateLimiter}"
 *       key-resolver: "#{@userKeyResolver}"
 *       sluice-rate-limiter.policy: api        # a policy of sluice.policies
 * }</pre>
 *
 * <p>The key is the gateway {@code KeyResolver}'s, as given ({@link HttpRateLimit#normalize}d: a long
 * one is hashed); the charge is one call on the limiter's async path. The response headers are the
 * verdict's ({@link HttpVerdict}), IETF by default ({@code sluice-rate-limiter.headers}). The gateway's
 * filter answers a refusal itself (its {@code status-code}, 429 by default, and no body); for
 * Sluice's own 429/503 with the problem body, and several policies per route, use the {@code Sluice}
 * filter ({@link SluiceGatewayFilterFactory}). In the Java DSL, {@link #forPolicy} gives a limiter of
 * one policy for every route it is set on.
 */
public class SluiceGatewayRateLimiter extends AbstractRateLimiter<SluiceGatewayRateLimiter.Config> {
  /** The prefix of this limiter's arguments in a route's {@code RequestRateLimiter} filter. */
  public static final String CONFIGURATION_PROPERTY_NAME = "sluice-rate-limiter";

  private final RateLimiterRegistry registry;
  /** Each limiter's clock for its verdicts, as the HTTP filters choose it (HttpRateLimit's ticker). */
  private final Map<RateLimiter, Ticker> tickers = new ConcurrentHashMap<>();
  /** The settings of a route that has none of its own; null: such a route is a configuration error. */
  private final Config defaults;

  public SluiceGatewayRateLimiter(RateLimiterRegistry registry, ConfigurationService configurationService) {
    this(registry, configurationService, null);
  }

  private SluiceGatewayRateLimiter(RateLimiterRegistry registry, ConfigurationService configurationService, Config defaults) {
    super(Config.class, CONFIGURATION_PROPERTY_NAME, configurationService);
    this.registry = registry;
    this.defaults = defaults;
  }

  /** A limiter charging {@code policy} on every route it is set on (the Java DSL: {@code c.setRateLimiter(...)}). */
  public SluiceGatewayRateLimiter forPolicy(String policy) {
    registry.limiter(policy);
    return new SluiceGatewayRateLimiter(registry, null, new Config().setPolicy(policy));
  }

  @Override public Mono<Response> isAllowed(String routeId, String id) {
    Config c = getConfig().getOrDefault(routeId, defaults);
    if (c == null) {
      return Mono.error(new IllegalArgumentException("route '" + routeId + "' sets no " + CONFIGURATION_PROPERTY_NAME
          + ".policy; name one of sluice.policies " + registry.limiters().keySet()));
    }
    RateLimiter l = registry.limiter(c.getPolicy());
    HeaderFamily f = HeaderFamily.union(c.getHeaders());
    RateLimitHeaders families = RateLimitHeaders.of(f.ietf(), f.legacy());
    String key = HttpRateLimit.normalize(id);
    Ticker ticker = tickers.computeIfAbsent(l, x -> HttpRateLimit.builder(x).build().ticker());
    return Mono.fromCompletionStage(() -> l.tryAcquireAsync(key, c.getPermits(), l.policy())).map(d -> {
      HttpVerdict v = HttpVerdict.of(d, ticker.nowMicros(), families);
      Map<String, String> headers = new LinkedHashMap<>();
      for (HttpVerdict.Header h : v.headers()) {
        headers.put(h.name(), h.value());
      }
      return new Response(v.allowed(), headers);
    });
  }

  /** A route's {@code sluice-rate-limiter.*}. */
  public static class Config {
    private String policy;
    private long permits = 1;
    private List<HeaderFamily> headers = new ArrayList<>(List.of(HeaderFamily.IETF));

    /** The policy of {@code sluice.policies} the route's requests are charged to. */
    public String getPolicy() { return policy; }

    public Config setPolicy(String policy) {
      this.policy = policy;
      return this;
    }

    /** Permits a request costs (the gateway's {@code requestedTokens}). */
    public long getPermits() { return permits; }

    public Config setPermits(long permits) {
      this.permits = permits;
      return this;
    }

    /** The limit header families of the response: ietf (the default), legacy, all, none. */
    public List<HeaderFamily> getHeaders() { return headers; }

    public Config setHeaders(List<HeaderFamily> headers) {
      this.headers = headers;
      return this;
    }
  }
}
