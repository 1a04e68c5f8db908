package dev.sluice.spring.gateway;

import dev.sluice.http.HttpRateLimit;
import dev.sluice.http.HttpVerdict;
import dev.sluice.http.KeyResolver;
import dev.sluice.http.frontend.ServletAnswers;
import dev.sluice.kernel.HeaderFamily;
import dev.sluice.spring.RateLimiterRegistry;
import dev.sluice.spring.SluiceProperties;
import dev.sluice.spring.gateway.RouteCharge.Charged;
import jakarta.servlet.http.HttpServletResponse;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Function;
import org.springframework.cloud.gateway.server.mvc.common.Configurable;
import org.springframework.cloud.gateway.server.mvc.common.Shortcut;
import org.springframework.context.ApplicationContext;
import org.springframework.web.context.request.RequestAttributes;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;
import org.springframework.web.servlet.function.HandlerFilterFunction;
import org.springframework.web.servlet.function.HandlerFunction;
import org.springframework.web.servlet.function.ServerRequest;
import org.springframework.web.servlet.function.ServerResponse;
import org.springframework.web.servlet.support.RequestContextUtils;

/**
 * The {@code Sluice} filter of the servlet gateway (Spring Cloud Gateway Server MVC), as a
 * {@link HandlerFilterFunction}: charges a request to one or several policies of
 * {@code sluice.policies}, all or none, and answers a refusal with Sluice's own verdict (the 429 or
 * 503, headers and RFC 9457 body of the servlet filter). The same filter as the reactive gateway's
 * ({@link SluiceGatewayFilterFactory}), over the same route settings.
 *
 * <pre>{@code
 * // Java DSL
 * route("api").GET("/api/**", http()).before(uri("http://backend:8080"))
 *     .filter(SluiceFilterFunctions.sluice("per-second", "per-hour"))          // key: the client address
 *     .filter(SluiceFilterFunctions.sluice(c -> c.setPolicies("per-second")
 *         .setKeyResolver((Function<ServerRequest, String>) r -> r.headers().firstHeader("X-Api-Key"))
 *         .setRefundOn(List.of("5xx"))))
 *     .build();
 *
 * # YAML (spring.cloud.gateway.server.webmvc.routes[].filters)
 * - Sluice=per-second,per-hour
 * - name: Sluice
 *   args:
 *     policies: per-second,per-hour
 *     key-resolver: apiKey                     # a bean: Function<ServerRequest, String> or sluice-http KeyResolver
 *     key: "headers().firstHeader('X-Api-Key')"  # or a SpEL expression over the ServerRequest
 *     refund-on: 5xx
 *     permits: 1
 *     headers: ietf,legacy
 * }</pre>
 *
 * <p>The gateway builds these filters before the application context can be reached: everything
 * but the policies and a key resolver named as a bean is checked when the route is built; those are
 * looked up on the route's first request, through the request's application context. The charge is
 * synchronous (a servlet request has its own thread); a refund (the route's {@code refund-on}) is
 * given once the downstream answered, before its answer is written to the client.
 */
public final class SluiceFilterFunctions {
  private SluiceFilterFunctions() {}

  /** A filter charging {@code policies}, all or none; the key is the client address. */
  public static HandlerFilterFunction<ServerResponse, ServerResponse> sluice(String... policies) {
    return sluice(new Config().setPolicies(policies));
  }

  /** A filter of the settings {@code settings} sets on a new {@link Config}. */
  public static HandlerFilterFunction<ServerResponse, ServerResponse> sluice(Consumer<Config> settings) {
    Config c = new Config();
    settings.accept(c);
    return sluice(c);
  }

  /** A filter of {@code config} (read now: later changes to it are not seen); YAML's {@code Sluice} filter. */
  @Shortcut(type = Shortcut.Type.LIST, fieldOrder = "policies")
  @Configurable
  public static HandlerFilterFunction<ServerResponse, ServerResponse> sluice(Config config) {
    return new Filter(config);
  }

  /** A route's settings: the {@code args:} of the YAML filter, or {@code new Config().setPolicies(...)} in the Java DSL. */
  public static class Config {
    private List<String> policies = new ArrayList<>();
    private Object keyResolver;
    private String key;
    private List<String> refundOn = new ArrayList<>();
    private long permits = 1;
    private List<String> headers = new ArrayList<>(List.of("ietf", "legacy"));

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

    /**
     * The key: a {@code Function<ServerRequest, String>}, a sluice-http {@link KeyResolver}, or the name
     * of a bean of either ({@code apiKey} or {@code #{@apiKey}}); null for none.
     */
    public Object getKeyResolver() { return keyResolver; }

    public Config setKeyResolver(Object keyResolver) {
      this.keyResolver = keyResolver;
      return this;
    }

    /** A SpEL expression over the {@code ServerRequest} (its root object) giving the key; beans as {@code @name}. */
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
    public List<String> getHeaders() { return headers; }

    public Config setHeaders(List<String> headers) {
      this.headers = headers;
      return this;
    }
  }

  /** The gateway's way to find the {@code Sluice} filter for routes declared in configuration: a bean of the auto-configuration. */
  public static class FilterSupplier implements org.springframework.cloud.gateway.server.mvc.filter.FilterSupplier {
    @Override public Collection<Method> get() {
      try {
        return List.of(SluiceFilterFunctions.class.getMethod("sluice", Config.class));
      } catch (NoSuchMethodException e) {
        throw new IllegalStateException(e);
      }
    }
  }

  /** One route's filter; bound to the application on its first request. */
  private static final class Filter implements HandlerFilterFunction<ServerResponse, ServerResponse> {
    private final RouteCharge.Settings settings;
    private final Object keyResolver;
    private final String key;
    private volatile Bound bound;

    Filter(Config c) {
      List<HeaderFamily> families = new ArrayList<>();
      for (String h : c.getHeaders() == null ? List.<String>of() : c.getHeaders()) {
        families.add(HeaderFamily.parse(RouteCharge.where(c.getPolicies()) + ": headers", h));
      }
      this.settings = RouteCharge.Settings.of(c.getPolicies(), c.getPermits(), families, c.getRefundOn());
      this.keyResolver = c.getKeyResolver();
      this.key = c.getKey();
      if (keyResolver != null && !(keyResolver instanceof String) && !(keyResolver instanceof Function<?, ?>)
          && !(keyResolver instanceof KeyResolver)) {
        throw new IllegalArgumentException(settings.where() + ": key-resolver is a " + keyResolver.getClass().getName()
            + ", not a Function<ServerRequest, String> or a sluice-http KeyResolver");
      }
      RouteCharge.oneKeySource(settings.where(), keyResolver instanceof String s ? !s.isBlank() : keyResolver != null, key);
      if (key != null && !key.isBlank()) {
        KeyExpression.parse(settings.where(), key, null); // its text now; its beans on the first request
      }
    }

    @Override public ServerResponse filter(ServerRequest request, HandlerFunction<ServerResponse> next) throws Exception {
      Bound b = bind(request);
      Charged c = b.route.charge(HttpRateLimit.normalize(b.key.apply(request)));
      HttpVerdict verdict = b.route.verdict(c.decision);
      if (!verdict.allowed()) {
        // The servlet front end's one writer: the same status, headers and body as the servlet filter.
        return ServerResponse.status(verdict.status()).build((req, res) -> {
          ServletAnswers.refuse(res, verdict);
          return null;
        });
      }
      ServerResponse response;
      try {
        response = next.handle(request);
      } catch (Exception | Error e) {
        refund(b, c, true, -1);
        throw e;
      }
      // Before the answer is written: a client that reads it finds the permits back.
      refund(b, c, false, response.statusCode().value());
      setHeaders(response, verdict);
      return response;
    }

    private static void refund(Bound b, Charged c, boolean threw, int status) {
      if (!b.route.neverRefunds() && b.route.refunds(threw, status) && c.claim()) {
        c.refund();
      }
    }

    /** The limit headers on the downstream's answer (the gateway's are mutable), else on the servlet response, before it is written. */
    private static void setHeaders(ServerResponse response, HttpVerdict verdict) {
      try {
        for (HttpVerdict.Header h : verdict.headers()) {
          response.headers().set(h.name(), h.value());
        }
      } catch (UnsupportedOperationException readOnly) {
        RequestAttributes a = RequestContextHolder.getRequestAttributes();
        HttpServletResponse servlet = a instanceof ServletRequestAttributes s ? s.getResponse() : null;
        if (servlet != null) {
          for (HttpVerdict.Header h : verdict.headers()) {
            servlet.setHeader(h.name(), h.value());
          }
        }
      }
    }

    private Bound bind(ServerRequest request) {
      ApplicationContext context = RequestContextUtils.findWebApplicationContext(request.servletRequest());
      if (context == null) {
        throw new IllegalStateException(settings.where() + ": the request has no application context; the filter runs in a Spring MVC application");
      }
      Bound b = bound;
      if (b == null || b.context != context) {
        synchronized (this) {
          b = bound;
          if (b == null || b.context != context) {
            b = new Bound(context, this);
            bound = b;
          }
        }
      }
      return b;
    }
  }

  /** A route's filter on one application: its limiters and its key. */
  private static final class Bound {
    final ApplicationContext context;
    final RouteCharge route;
    final Function<ServerRequest, String> key;

    Bound(ApplicationContext context, Filter f) {
      this.context = context;
      this.route = new RouteCharge(context.getBean(RateLimiterRegistry.class), f.settings);
      this.key = keyOf(context, f);
    }

    @SuppressWarnings("unchecked")
    private Function<ServerRequest, String> keyOf(ApplicationContext context, Filter f) {
      Object r = f.keyResolver;
      if (r instanceof String name && !name.isBlank()) {
        r = context.getBean(RouteCharge.beanName(name));
        if (!(r instanceof Function<?, ?>) && !(r instanceof KeyResolver)) {
          throw new IllegalArgumentException(route.where + ": key-resolver bean '" + name + "' is a " + r.getClass().getName()
              + ", not a Function<ServerRequest, String> or a sluice-http KeyResolver");
        }
      }
      if (r instanceof KeyResolver resolver) {
        return request -> resolver.resolve(ServletAnswers.view(request.servletRequest()));
      }
      if (r instanceof Function<?, ?> function) {
        Function<ServerRequest, ?> fn = (Function<ServerRequest, ?>) function;
        return request -> {
          Object v = fn.apply(request);
          return v == null ? null : v.toString();
        };
      }
      if (f.key != null && !f.key.isBlank()) {
        KeyExpression e = KeyExpression.parse(route.where, f.key, context);
        return e::evaluate;
      }
      KeyResolver address = RouteCharge.clientAddress(context.getBean(SluiceProperties.class));
      return request -> address.resolve(ServletAnswers.view(request.servletRequest()));
    }
  }
}
