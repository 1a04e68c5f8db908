package dev.sluice.spring;

import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.compose.AllOf;
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
import java.util.function.Function;
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
 * {@code sluice.http.rules}, compiled once at start-up. A request is matched by path and method
 * ({@link #candidates}), then by each rule's conditions and key ({@link #plan}): under the default
 * strategy {@code first} the first rule left charges it, under {@code all} every one of them, all or
 * nothing. A rule with several policies charges each, all or nothing. Requests no rule charges pass.
 * Shared by the servlet filter and the WebFilter, which differ only in how they call the limiters
 * (sync, async).
 */
final class HttpRules {
  private static final System.Logger LOG = System.getLogger(HttpRules.class.getName());
  private final List<Rule> rules;
  private final boolean all;
  /** sluice.http.metrics.tags, or null. */
  private final HttpTags tags;
  private final KeyResolver address;

  HttpRules(SluiceProperties.Http http, RateLimiterRegistry registry, BeanFactory beans) {
    this(http, registry, beans, null);
  }

  /** The rules; {@code meters} records sluice.http.requests when tags are configured (null: no registry). */
  HttpRules(SluiceProperties.Http http, RateLimiterRegistry registry, BeanFactory beans, io.micrometer.core.instrument.MeterRegistry meters) {
    TrustedProxies proxies = http.getTrustedProxies().isEmpty() ? TrustedProxies.none() : TrustedProxies.of(http.getTrustedProxies());
    KeyResolver address = KeyResolver.forwardedFor(proxies);
    SpelExpressionParser parser = new SpelExpressionParser();
    List<Rule> compiled = new ArrayList<>();
    for (int i = 0; i < http.getRules().size(); i++) {
      compiled.add(new Rule("sluice.http.rules[" + i + "]", http.getRules().get(i), http.getResponse(), registry, address, parser, beans));
    }
    this.rules = List.copyOf(compiled);
    this.all = http.getStrategy() == SluiceProperties.Strategy.ALL;
    this.address = address;
    this.tags = HttpTags.of(http.getMetrics().getTags(), meters, beans);
  }

  /** Counts a decided request under sluice.http.metrics.tags, when configured. */
  void record(Charged charged, RequestView request, Function<String, String> query) {
    if (tags != null) {
      tags.record(charged.decision(), new RuleRequest(request, query, address));
    }
  }

  boolean isEmpty() {
    return rules.isEmpty();
  }

  /** The rules whose patterns and methods match {@code method} and {@code path} (within the application), in order; empty for none. */
  List<Rule> candidates(String method, String path) {
    if (rules.isEmpty()) {
      return List.of();
    }
    PathContainer p = PathContainer.parsePath(path);
    List<Rule> found = null;
    for (Rule r : rules) {
      if (r.matches(method, p)) {
        boolean last = !all && r.alwaysCharges; // strategy first: no later rule can charge the request
        if (last && found == null) {
          return List.of(r);
        }
        if (found == null) {
          found = new ArrayList<>(2);
        }
        found.add(r);
        if (last) {
          return found;
        }
      }
    }
    return found == null ? List.of() : found;
  }

  /**
   * What charges {@code request}, one of the {@code candidates}: the legs of the first (strategy
   * first) or of every (strategy all) candidate whose conditions hold and that has a key (or charges
   * requests without one to the shared key); null when none charges it. {@code query} reads a query
   * parameter.
   */
  Plan plan(List<Rule> candidates, RequestView request, Function<String, String> query) {
    List<AllOf.Charge> charges = null;
    List<Rule> owners = null;
    RuleRequest root = null;
    for (Rule r : candidates) {
      if (r.conditional || r.choice != null) {
        if (root == null) {
          root = new RuleRequest(request, query, r.address);
        }
        if (r.conditional && !r.applies(root)) {
          continue;
        }
      }
      String key = r.keyResolver.resolve(request);
      if (key == null || key.isBlank()) {
        if (r.skipWhenNoKey) {
          continue;
        }
      }
      key = HttpRateLimit.normalize(key);
      if (charges == null) {
        charges = new ArrayList<>(2);
        owners = new ArrayList<>(2);
      }
      if (r.choice != null) {
        RateLimiter l = r.choose(root);
        charges.add(new AllOf.Charge(l, key, r.permits, r.registry.current(l)));
        owners.add(r);
      } else {
        for (RateLimiter l : r.limiters) {
          charges.add(new AllOf.Charge(l, key, r.permits, r.registry.current(l)));
          owners.add(r);
        }
      }
      if (!all) {
        break;
      }
    }
    return charges == null ? null : new Plan(List.copyOf(charges), List.copyOf(owners));
  }

  /** The charges a request makes, each with the rule it is for. */
  record Plan(List<AllOf.Charge> charges, List<Rule> rules) {
    /** True for one charge: decided by its limiter alone (async on WebFlux). */
    boolean single() {
      return charges.size() == 1;
    }

    /** The one charge's decision, by its limiter. */
    Charged acquire() {
      if (!single()) {
        AllOf.Result r = AllOf.charge(charges);
        return new Charged(this, r.legs(), r.decision());
      }
      AllOf.Charge c = charges.get(0);
      return charged(c.limiter().tryAcquire(c.key(), c.permits(), c.policy()));
    }

    /** The single charge's {@code decision} as a {@link Charged}. */
    Charged charged(Decision decision) {
      return new Charged(this, List.of(decision), decision);
    }
  }

  /**
   * What a request's charges decided: each leg's decision (the order of the plan's charges) and the
   * decision the answer reports (a refusal, or the most restrictive allowance).
   */
  record Charged(Plan plan, List<Decision> legs, Decision decision) {
    /** The rule the answer is rendered by: the deciding leg's, else the first. */
    Rule rule() {
      for (int i = 0; i < legs.size(); i++) {
        if (legs.get(i) == decision) {
          return plan.rules().get(i);
        }
      }
      return plan.rules().get(0);
    }

    HttpVerdict verdict() {
      return rule().verdict(decision);
    }

    /** True when any leg's rule may give its permits back after the handler. */
    boolean refundsPossible() {
      for (Rule r : plan.rules()) {
        if (r.refundsPossible()) {
          return true;
        }
      }
      return false;
    }

    /**
     * The refunds due once the handler threw ({@code threw}) or answered {@code status} with
     * {@code headers}: each allowed leg's ticket whose rule asks for it, refunded into its own
     * limiter (once per ticket) when the returned work runs; null when none is due. The rules'
     * conditions are read here, the store is called by the work.
     */
    Runnable refunds(boolean threw, int status, Function<String, String> headers) {
      RuleResponse response = null;
      List<Runnable> due = null;
      for (int i = 0; i < legs.size(); i++) {
        Decision d = legs.get(i);
        if (d == null || !d.allowed() || d.ticket().isEmpty()) {
          continue;
        }
        Rule r = plan.rules().get(i);
        if (r.refundCondition != null && response == null) {
          response = new RuleResponse(threw ? 500 : status, headers);
        }
        if (r.refunds(threw, status, response)) {
          RateLimiter limiter = plan.charges().get(i).limiter();
          if (due == null) {
            due = new ArrayList<>(legs.size());
          }
          due.add(() -> limiter.refund(d.ticket().get()));
        }
      }
      if (due == null) {
        return null;
      }
      List<Runnable> work = due;
      return () -> work.forEach(Runnable::run);
    }

    /** {@link #refunds}, run now. */
    void refund(boolean threw, int status, Function<String, String> headers) {
      Runnable r = refunds(threw, status, headers);
      if (r != null) {
        r.run();
      }
    }
  }

  /** One compiled rule. */
  static final class Rule {
    final HttpRateLimit rateLimit;
    final List<RateLimiter> limiters;
    /** The policies' numbers in force (sluice.policies reloaded). */
    final RateLimiterRegistry registry;
    final long permits;
    final KeyResolver keyResolver;
    final KeyResolver address;
    final boolean skipWhenNoKey;
    final RefusalResponse response;
    /** True when the rule has an execute or skip condition. */
    final boolean conditional;
    /** The policy-expression's choice among sluice.policies (the rule's policy its fallback), or null. */
    final PolicyChoice choice;
    private final Expression policyExpression;
    /** True when the rule charges every request its patterns and methods match (no condition, no skip-when-no-key). */
    final boolean alwaysCharges;
    private final Expression executeCondition;
    private final Expression skipCondition;
    private final Expression refundCondition;
    private final BeanFactoryResolver beanResolver;
    private final List<PathPattern> patterns;
    private final Set<String> methods;
    private final String where;
    private final AtomicBoolean warned = new AtomicBoolean();
    private final AtomicBoolean conditionWarned = new AtomicBoolean();

    Rule(String where, SluiceProperties.Rule r, SluiceProperties.Response globalResponse, RateLimiterRegistry registry,
        KeyResolver address, SpelExpressionParser parser, BeanFactory beans) {
      this.where = where;
      this.address = address;
      this.registry = registry;
      List<String> names = new ArrayList<>();
      boolean one = r.getPolicy() != null && !r.getPolicy().isBlank();
      boolean several = r.getPolicies() != null && !r.getPolicies().isEmpty();
      if (one && several) {
        throw new IllegalArgumentException(where + " names policy '" + r.getPolicy() + "' and policies " + r.getPolicies()
            + "; give one of them (policies: [" + r.getPolicy() + ", ...] charges them all)");
      }
      if (!one && !several) {
        boolean chosen = r.getPolicyExpression() != null && !r.getPolicyExpression().isBlank();
        throw new IllegalArgumentException(where + ".policy is missing; name one of sluice.policies " + registry.limiters().keySet()
            + (chosen ? " (with policy-expression: the policy of the requests it chooses none for)" : ""));
      }
      if (one) {
        names.add(r.getPolicy());
      } else {
        names.addAll(r.getPolicies());
      }
      List<RateLimiter> ls = new ArrayList<>();
      for (int i = 0; i < names.size(); i++) {
        String at = one ? where + ".policy" : where + ".policies[" + i + "]";
        try {
          RateLimiter l = registry.limiter(names.get(i));
          if (ls.contains(l)) {
            throw new IllegalArgumentException(at + " names '" + names.get(i) + "' twice; a rule charges each policy once");
          }
          ls.add(l);
        } catch (IllegalArgumentException e) {
          throw e.getMessage().startsWith(at) ? e : new IllegalArgumentException(at + ": " + e.getMessage(), e);
        }
      }
      this.limiters = List.copyOf(ls);
      RateLimiter limiter = limiters.get(0);
      if (r.getPermits() < 1) {
        throw new IllegalArgumentException(where + ".permits is " + r.getPermits() + "; a request costs at least 1 permit");
      }
      this.permits = r.getPermits();
      String pe = r.getPolicyExpression();
      if (pe != null && !pe.isBlank()) {
        if (!one) {
          throw new IllegalArgumentException(where + ".policy-expression '" + pe + "' is given with policies " + r.getPolicies()
              + "; an expression chooses one policy per request: give policy (its fallback) instead of policies");
        }
        if (permits > limiter.policy().limit()) {
          throw new IllegalArgumentException(where + ".policy '" + r.getPolicy() + "' allows " + limiter.policy().limit()
              + " permits, below the rule's permits " + permits + "; the fallback of policy-expression must grant a request");
        }
        this.policyExpression = parse(parser, where + ".policy-expression", pe, pe);
        this.choice = new PolicyChoice(where + ".policy-expression '" + pe + "'", limiter, registry);
      } else {
        this.policyExpression = null;
        this.choice = null;
      }
      Expression key = parse(parser, where + ".key", r.getKey() == null || r.getKey().isBlank() ? "remoteAddress" : r.getKey(), r.getKey());
      this.beanResolver = new BeanFactoryResolver(beans);
      this.keyResolver = view -> evaluate(key, new RequestKeys(view, address));
      this.skipWhenNoKey = r.isSkipWhenNoKey();
      this.executeCondition = condition(parser, where + ".execute-condition", r.getExecuteCondition());
      this.skipCondition = condition(parser, where + ".skip-condition", r.getSkipCondition());
      this.conditional = executeCondition != null || skipCondition != null;
      this.alwaysCharges = !conditional && !skipWhenNoKey;
      this.refundCondition = condition(parser, where + ".refund-condition", r.getRefundCondition());
      if (refundCondition != null && (r.isSkipOnSuccess() || r.isSkipOnFailure())) {
        throw new IllegalArgumentException(where + ".refund-condition '" + r.getRefundCondition() + "' is given with "
            + (r.isSkipOnSuccess() ? "skip-on-success" : "skip-on-failure") + "; give one refund rule (skip-on-success is "
            + "refund-condition \"status < 400\", skip-on-failure \"status >= 500\")");
      }
      HeaderFamily families = HeaderFamily.union(r.getHeaders());
      this.rateLimit = HttpRateLimit.builder(limiter).policy(limiter.policy()).keyResolver(keyResolver)
          .headers(RateLimitHeaders.of(families.ietf(), families.legacy())).skipSuccessfulRequests(r.isSkipOnSuccess())
          .skipFailedRequests(r.isSkipOnFailure()).build();
      this.response = RefusalResponse.of(where, r.getResponse(), globalResponse);
      PathPatternParser pp = new PathPatternParser();
      List<PathPattern> ps = new ArrayList<>();
      for (int i = 0; i < r.getPatterns().size(); i++) {
        String s = r.getPatterns().get(i);
        try {
          ps.add(pp.parse(s));
        } catch (RuntimeException e) {
          throw new IllegalArgumentException(where + ".patterns[" + i + "] '" + s + "' is not a path pattern: " + e.getMessage(), e);
        }
      }
      this.patterns = List.copyOf(ps);
      Set<String> ms = new TreeSet<>();
      for (String m : r.getMethods()) {
        ms.add(m.strip().toUpperCase(Locale.ROOT));
      }
      this.methods = Set.copyOf(ms);
    }

    private static Expression parse(SpelExpressionParser parser, String where, String text, String given) {
      try {
        return parser.parseExpression(text);
      } catch (ParseException e) {
        throw new IllegalArgumentException(where + " '" + given + "' is not a SpEL expression: " + e.getMessage(), e);
      }
    }

    private static Expression condition(SpelExpressionParser parser, String where, String text) {
      return text == null || text.isBlank() ? null : parse(parser, where, text, text);
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

    /** Whether the rule charges {@code request} by its conditions: the execute condition holds and the skip condition does not. */
    boolean applies(RuleRequest request) {
      return (executeCondition == null || test(executeCondition, request, "execute-condition", true))
          && (skipCondition == null || !test(skipCondition, request, "skip-condition", false));
    }

    /**
     * The condition's value on {@code root}. One that fails or gives no boolean counts as
     * {@code failed} (the value that charges the request: a broken condition never opens a way
     * around the limit), and is logged once.
     */
    private boolean test(Expression condition, Object root, String name, boolean failed) {
      try {
        StandardEvaluationContext ctx = new StandardEvaluationContext(root);
        ctx.setBeanResolver(beanResolver);
        Object v = condition.getValue(ctx);
        if (v instanceof Boolean b) {
          return b;
        }
        throw new IllegalStateException("it gave " + (v == null ? "null" : v.getClass().getSimpleName() + " " + v) + ", not true or false");
      } catch (RuntimeException e) {
        if (conditionWarned.compareAndSet(false, true)) {
          LOG.log(System.Logger.Level.WARNING, where + "." + name + " '" + condition.getExpressionString() + "' failed ("
              + e.getMessage() + "); taken as " + failed, e);
        }
        return failed;
      }
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
      return rateLimit.skipFailedRequests() || rateLimit.skipSuccessfulRequests() || refundCondition != null;
    }

    /** Whether a leg of this rule is given back: skip-on-success / skip-on-failure, or the refund condition on {@code response}. */
    boolean refunds(boolean threw, int status, RuleResponse response) {
      if (refundCondition != null) {
        return test(refundCondition, response, "refund-condition", false);
      }
      return rateLimit.refunds(threw, status);
    }

    /** The limiter of the policy the policy-expression chooses for {@code request}; the rule's policy when it chooses none. */
    RateLimiter choose(RuleRequest request) {
      Object answer;
      try {
        StandardEvaluationContext ctx = new StandardEvaluationContext(request);
        ctx.setBeanResolver(beanResolver);
        answer = policyExpression.getValue(ctx);
      } catch (RuntimeException e) {
        return choice.failed(e);
      }
      return choice.limiter(answer, permits);
    }

    private String evaluate(Expression key, RequestKeys root) {
      try {
        StandardEvaluationContext ctx = new StandardEvaluationContext(root);
        ctx.setBeanResolver(beanResolver);
        return root.keyOf(key.getValue(ctx));
      } catch (RuntimeException e) {
        // A request must never turn a key expression's failure into a way around the limit or an
        // error page: it is charged to the shared unknown key (also under skip-when-no-key), and the
        // expression is reported once.
        if (warned.compareAndSet(false, true)) {
          LOG.log(System.Logger.Level.WARNING, where + ".key failed on a request (" + e
              + "); such requests are charged to the key '" + KeyResolver.UNKNOWN + "'", e);
        }
        return KeyResolver.UNKNOWN;
      }
    }
  }
}
