package dev.sluice.spring;

import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.http.HttpRateLimit;
import dev.sluice.http.HttpVerdict;
import dev.sluice.http.KeyResolver;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.http.RequestView;
import dev.sluice.http.TrustedProxies;
import dev.sluice.kernel.HeaderFamily;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.expression.spel.support.StandardEvaluationContext;
import org.springframework.http.server.PathContainer;
import org.springframework.web.util.pattern.PathPattern;
import org.springframework.web.util.pattern.PathPatternParser;

/**
 * {@code sluice.http.rules}, compiled once at start-up: a request is charged by the first rule whose
 * patterns and methods match it; requests no rule matches pass uncharged. Shared by the servlet
 * filter and the WebFilter, which differ only in how they call the limiter (sync, async).
 */
final class HttpRules {
  private static final System.Logger LOG = System.getLogger(HttpRules.class.getName());
  private final List<Rule> rules;

  HttpRules(SluiceProperties.Http http, RateLimiterRegistry registry, BeanFactory beans) {
    TrustedProxies proxies = http.getTrustedProxies().isEmpty() ? TrustedProxies.none() : TrustedProxies.of(http.getTrustedProxies());
    KeyResolver address = KeyResolver.forwardedFor(proxies);
    SpelExpressionParser parser = new SpelExpressionParser();
    List<Rule> compiled = new ArrayList<>();
    for (int i = 0; i < http.getRules().size(); i++) {
      compiled.add(new Rule("sluice.http.rules[" + i + "]", http.getRules().get(i), registry, address, parser, beans));
    }
    this.rules = List.copyOf(compiled);
  }

  boolean isEmpty() {
    return rules.isEmpty();
  }

  /** The first rule matching {@code method} and {@code path} (within the application), or null. */
  Rule match(String method, String path) {
    if (rules.isEmpty()) {
      return null;
    }
    PathContainer p = PathContainer.parsePath(path);
    for (Rule r : rules) {
      if (r.matches(method, p)) {
        return r;
      }
    }
    return null;
  }

  /** One compiled rule. */
  static final class Rule {
    final HttpRateLimit rateLimit;
    final RateLimiter limiter;
    final Policy policy;
    final long permits;
    private final List<PathPattern> patterns;
    private final Set<String> methods;
    private final String where;
    private final AtomicBoolean warned = new AtomicBoolean();

    Rule(String where, SluiceProperties.Rule r, RateLimiterRegistry registry, KeyResolver address,
        SpelExpressionParser parser, BeanFactory beans) {
      this.where = where;
      if (r.getPolicy() == null || r.getPolicy().isBlank()) {
        throw new IllegalArgumentException(where + ".policy is missing; name one of sluice.policies " + registry.limiters().keySet());
      }
      try {
        this.limiter = registry.limiter(r.getPolicy());
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(where + ".policy: " + e.getMessage(), e);
      }
      this.policy = limiter.policy();
      if (r.getPermits() < 1) {
        throw new IllegalArgumentException(where + ".permits is " + r.getPermits() + "; a request costs at least 1 permit");
      }
      this.permits = r.getPermits();
      Expression key;
      try {
        key = parser.parseExpression(r.getKey() == null || r.getKey().isBlank() ? "remoteAddress" : r.getKey());
      } catch (ParseException e) {
        throw new IllegalArgumentException(where + ".key '" + r.getKey() + "' is not a SpEL expression: " + e.getMessage(), e);
      }
      BeanFactoryResolver beanResolver = new BeanFactoryResolver(beans);
      KeyResolver resolver = view -> evaluate(key, beanResolver, new RequestKeys(view, address));
      HeaderFamily families = HeaderFamily.union(r.getHeaders());
      this.rateLimit = HttpRateLimit.builder(limiter).policy(policy).keyResolver(resolver)
          .headers(RateLimitHeaders.of(families.ietf(), families.legacy())).skipSuccessfulRequests(r.isSkipOnSuccess())
          .skipFailedRequests(r.isSkipOnFailure()).build();
      PathPatternParser pp = new PathPatternParser();
      List<PathPattern> ps = new ArrayList<>();
      for (String s : r.getPatterns()) {
        ps.add(pp.parse(s));
      }
      this.patterns = List.copyOf(ps);
      Set<String> ms = new TreeSet<>();
      for (String m : r.getMethods()) {
        ms.add(m.strip().toUpperCase(Locale.ROOT));
      }
      this.methods = Set.copyOf(ms);
    }

    boolean matches(String method, PathContainer path) {
      if (!methods.isEmpty() && !methods.contains(method)) {
        return false;
      }
      if (patterns.isEmpty()) {
        return true;
      }
      for (PathPattern p : patterns) {
        if (p.matches(path)) {
          return true;
        }
      }
      return false;
    }

    /**
     * The key {@code request} is charged under: the expression's result namespaced by its source
     * ({@link RequestKeys#keyOf}); unknown when it gives none; hashed when long.
     */
    String keyOf(RequestView request) {
      return rateLimit.keyOf(request);
    }

    HttpVerdict verdict(Decision d) {
      return HttpVerdict.of(d, rateLimit.ticker().nowMicros(), rateLimit.headers());
    }

    boolean refundsPossible() {
      return rateLimit.skipFailedRequests() || rateLimit.skipSuccessfulRequests();
    }

    private String evaluate(Expression key, BeanFactoryResolver beans, RequestKeys root) {
      try {
        StandardEvaluationContext ctx = new StandardEvaluationContext(root);
        ctx.setBeanResolver(beans);
        return root.keyOf(key.getValue(ctx));
      } catch (RuntimeException e) {
        // A request must never turn a key expression's failure into a way around the limit or an
        // error page: it is charged to the shared unknown key, and the expression is reported once.
        if (warned.compareAndSet(false, true)) {
          LOG.log(System.Logger.Level.WARNING, where + ".key failed on a request (" + e
              + "); such requests are charged to the key '" + KeyResolver.UNKNOWN + "'", e);
        }
        return null;
      }
    }
  }
}
