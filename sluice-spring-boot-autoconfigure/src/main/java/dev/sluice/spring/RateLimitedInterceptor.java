package dev.sluice.spring;

import dev.sluice.Decision;
import dev.sluice.RateLimiter;
import dev.sluice.Ticket;
import dev.sluice.compose.AllOf;
import dev.sluice.guard.RateLimitExceededException;
import dev.sluice.http.HttpRateLimit;
import dev.sluice.kernel.Inputs;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.aop.support.AopUtils;
import org.springframework.aop.support.StaticMethodMatcherPointcut;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.expression.Expression;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * Runs {@link RateLimited}: evaluates each annotation's key and permits, charges them (several
 * annotations as one {@link AllOf} call, each annotation a charge of its own key and permits: all
 * allow or none is charged), then proceeds, calls the
 * fallback method, or throws {@link RateLimitExceededException}; after a call that returned, settles
 * the reservation of each annotation with a {@code cost} at that cost. What each annotation means is
 * worked out once per method and class.
 */
final class RateLimitedInterceptor implements MethodInterceptor {
  private static final System.Logger LOG = System.getLogger(RateLimitedInterceptor.class.getName());
  private static final boolean REACTOR = ClassUtils.isPresent("reactor.core.publisher.Mono", RateLimitedInterceptor.class.getClassLoader());
  private final RateLimiterRegistry registry;
  private final BeanFactoryResolver beans;
  private final SpelExpressionParser parser = new SpelExpressionParser();
  private final ParameterNameDiscoverer names = new DefaultParameterNameDiscoverer();
  private final Map<Object, Plan> plans = new ConcurrentHashMap<>();
  /** A cost that failed: the annotation's reservation stays charged. */
  private static final long KEEP = -1;

  RateLimitedInterceptor(RateLimiterRegistry registry, BeanFactory beans) {
    this.registry = registry;
    this.beans = new BeanFactoryResolver(beans);
  }

  /** Methods with {@link RateLimited} (or repeated ones), or any method of a class that has it. */
  static final class Pointcut extends StaticMethodMatcherPointcut {
    @Override public boolean matches(Method method, Class<?> targetClass) {
      return !annotations(method, targetClass).isEmpty();
    }
  }

  static Set<RateLimited> annotations(Method method, Class<?> targetClass) {
    Method specific = ClassUtils.getMostSpecificMethod(method, targetClass);
    Set<RateLimited> own = AnnotatedElementUtils.findMergedRepeatableAnnotations(specific, RateLimited.class);
    return !own.isEmpty() ? own : AnnotatedElementUtils.findMergedRepeatableAnnotations(targetClass, RateLimited.class);
  }

  /** How a message names an annotated method: {@code @RateLimited on com.example.Reports.export}. */
  static String where(Class<?> targetClass, Method method) {
    return "@RateLimited on " + targetClass.getName() + "." + method.getName();
  }

  /** The limiter of {@code a}'s policy; a policy {@code sluice.policies} lacks is an error naming {@code where}, the name and the policies. */
  static RateLimiter limiter(RateLimiterRegistry registry, RateLimited a, String where) {
    try {
      return registry.limiter(a.policy());
    } catch (IllegalArgumentException e) {
      throw new IllegalStateException(where + ": " + e.getMessage(), e);
    }
  }

  /**
   * Checks, as the application context finishes its refresh, that every {@link RateLimited} on a
   * bean's class or methods names a policy of {@code sluice.policies}: a misspelt name stops the
   * application at start instead of answering its first call with a 500. Every bean definition is
   * looked at by type, lazy ones too, without creating any; Spring's own classes are skipped.
   */
  static final class PolicyCheck implements SmartInitializingSingleton {
    private final ConfigurableListableBeanFactory beans;
    private final ObjectProvider<RateLimiterRegistry> registry;

    PolicyCheck(ConfigurableListableBeanFactory beans, ObjectProvider<RateLimiterRegistry> registry) {
      this.beans = beans;
      this.registry = registry;
    }

    @Override public void afterSingletonsInstantiated() {
      RateLimiterRegistry r = registry.getIfAvailable();
      if (r == null) {
        return;
      }
      Set<Class<?>> seen = new HashSet<>();
      for (String name : beans.getBeanDefinitionNames()) {
        Class<?> type = beans.getType(name, false);
        Class<?> target = type == null ? null : ClassUtils.getUserClass(type);
        if (target == null || !seen.add(target) || target.getName().startsWith("org.springframework.")
            || !AnnotationUtils.isCandidateClass(target, RateLimited.class)) {
          continue; // Spring's own classes carry no @RateLimited (Spring's event-listener scan skips them too)
        }
        for (RateLimited a : AnnotatedElementUtils.findMergedRepeatableAnnotations(target, RateLimited.class)) {
          limiter(r, a, "@RateLimited on " + target.getName());
        }
        for (Method m : ReflectionUtils.getUniqueDeclaredMethods(target, ReflectionUtils.USER_DECLARED_METHODS)) {
          Set<RateLimited> on = AnnotatedElementUtils.findMergedRepeatableAnnotations(m, RateLimited.class);
          for (RateLimited a : on) {
            limiter(r, a, where(target, m));
            expressions(a, where(target, m));
          }
          timeout(on, where(target, m));
        }
      }
    }
  }

  @Override public Object invoke(MethodInvocation mi) throws Throwable {
    Class<?> targetClass = mi.getThis() == null ? mi.getMethod().getDeclaringClass() : AopUtils.getTargetClass(mi.getThis());
    Plan plan = plans.computeIfAbsent(List.of(mi.getMethod(), targetClass), k -> new Plan(mi.getMethod(), targetClass));
    Object[] args = mi.getArguments();
    MethodBasedEvaluationContext ctx = new MethodBasedEvaluationContext(mi.getThis(), plan.method, args, names);
    ctx.setBeanResolver(beans);
    if (plan.kind == Kind.MONO) {
      return Reactive.invoke(plan.acquireAsync(ctx), mi, plan, ctx);
    }
    if (plan.kind == Kind.FLUX) {
      return Reactive.invokeMany(plan.acquireAsync(ctx), mi, plan);
    }
    if (plan.kind == Kind.STAGE) {
      return Staged.invoke(plan.acquireAsync(ctx), mi, plan, ctx);
    }
    AllOf.Result r = plan.acquire(ctx);
    if (!r.allowed()) {
      return refuse(r.decision(), mi, plan);
    }
    Object result = mi.proceed(); // a throw keeps the reservation charged
    plan.settle(r, ctx, result);
    return result;
  }

  /** A refused call's outcome: the fallback's result, or the refusal thrown. */
  static Object refuse(Decision d, MethodInvocation mi, Plan plan) throws Throwable {
    RateLimitExceededException refusal = new RateLimitExceededException(d);
    if (plan.fallback == null) {
      throw refusal;
    }
    Object[] args = mi.getArguments();
    Object[] withRefusal = Arrays.copyOf(args, args.length + 1);
    withRefusal[args.length] = refusal;
    try {
      return plan.fallback.invoke(mi.getThis(), withRefusal);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  /**
   * Methods returning a {@code Mono}: decided with the limiters' async methods when the Mono is
   * subscribed, so that a WebFlux handler never waits on a store on its event loop. A refusal is the
   * fallback's Mono (its return type is checked to be a Mono when the plan is made) or the error. A
   * cost settles on the emitted value, on the bounded-elastic scheduler (a settlement is a store
   * call), before the value goes on.
   */
  private static final class Reactive {
    /** A {@code Flux} method: decided once when subscribed; the stream, the fallback's stream, or the refusal as its error. */
    @SuppressWarnings("unchecked")
    static Object invokeMany(Supplier<CompletionStage<AllOf.Result>> decision, MethodInvocation mi, Plan plan) {
      return Mono.fromCompletionStage(decision).flatMapMany(d -> {
        try {
          return (reactor.core.publisher.Flux<Object>) (d.allowed() ? mi.proceed() : refuse(d.decision(), mi, plan));
        } catch (Throwable t) {
          return reactor.core.publisher.Flux.error(t);
        }
      });
    }

    @SuppressWarnings("unchecked")
    static Object invoke(Supplier<CompletionStage<AllOf.Result>> decision, MethodInvocation mi, Plan plan,
        MethodBasedEvaluationContext ctx) {
      return Mono.fromCompletionStage(decision).flatMap(d -> {
        try {
          if (!d.allowed()) {
            return (Mono<Object>) refuse(d.decision(), mi, plan);
          }
          Mono<Object> call = (Mono<Object>) mi.proceed();
          if (!plan.costs) {
            return call;
          }
          return call.flatMap(v -> Mono.fromRunnable(() -> plan.settle(d, ctx, v))
              .subscribeOn(Schedulers.boundedElastic()).thenReturn(v));
        } catch (Throwable t) {
          return Mono.error(t);
        }
      });
    }
  }

  /**
   * The wait of the annotations' {@code timeout}, or null when none has one: a duration as the
   * policies write it (the kernel's {@code PolicyWords.duration}), on a method with one annotation.
   * Checked at start by {@link PolicyCheck}, so a bad one stops the application.
   */
  static java.time.Duration timeout(java.util.Collection<RateLimited> all, String where) {
    java.time.Duration found = null;
    for (RateLimited a : all) {
      if (a.timeout().isEmpty()) {
        continue;
      }
      if (all.size() > 1) {
        throw new IllegalStateException(where + ": timeout '" + a.timeout() + "' on a method with " + all.size()
            + " @RateLimited; a wait is for one limit: keep one annotation, or leave timeout out");
      }
      try {
        found = dev.sluice.kernel.PolicyWords.duration(where + ": timeout", a.timeout());
      } catch (IllegalArgumentException e) {
        throw new IllegalStateException(e.getMessage(), e);
      }
      if (found.isNegative()) {
        throw new IllegalStateException(where + ": timeout '" + a.timeout() + "' is negative; give how long a call may wait");
      }
    }
    return found;
  }

  /**
   * Parses {@code a}'s key, permits and cost, so that one that is not SpEL stops the application at
   * start, naming the method, the attribute and its value (else its first call would fail).
   */
  static void expressions(RateLimited a, String where) {
    SpelExpressionParser p = new SpelExpressionParser();
    String[][] all = {{"key", a.key()}, {"permits", a.permits()}, {"cost", a.cost()}, {"policyExpression", a.policyExpression()}};
    for (String[] e : all) {
      if (e[1].isEmpty()) {
        continue;
      }
      try {
        p.parseExpression(e[1]);
      } catch (org.springframework.expression.ParseException ex) {
        throw new IllegalStateException(where + ": " + e[0] + " '" + e[1] + "' is not a SpEL expression: " + ex.getMessage(), ex);
      }
    }
  }

  /** How a method's calls are decided: on the calling thread, or when its result is subscribed / asked for. */
  enum Kind {
    /** A plain method: decided on the calling thread before it runs. */
    BLOCKING,
    /** A {@code Mono}: decided with the limiters' async methods when subscribed. */
    MONO,
    /** A {@code Flux}: decided with the limiters' async methods when subscribed, once for the whole stream. */
    FLUX,
    /** A {@code CompletionStage} (or {@code CompletableFuture}): decided asynchronously, the method called when allowed. */
    STAGE
  }

  static Kind kind(Method method) {
    Class<?> r = method.getReturnType();
    if (REACTOR && Mono.class.isAssignableFrom(r)) {
      return Kind.MONO;
    }
    if (REACTOR && reactor.core.publisher.Flux.class.isAssignableFrom(r)) {
      return Kind.FLUX;
    }
    return CompletionStage.class.isAssignableFrom(r) ? Kind.STAGE : Kind.BLOCKING;
  }

  /**
   * Methods returning a {@code CompletionStage}: decided with the limiters' async methods, the
   * method called only when allowed; a refusal is the fallback's stage or a stage failed with the
   * refusal. A cost settles on the stage's value, off the completing thread (a settlement is a store
   * call), before the returned stage completes.
   */
  private static final class Staged {
    @SuppressWarnings("unchecked")
    static Object invoke(Supplier<CompletionStage<AllOf.Result>> decision, MethodInvocation mi, Plan plan,
        MethodBasedEvaluationContext ctx) {
      CompletableFuture<Object> out = new CompletableFuture<>();
      decision.get().whenComplete((d, err) -> {
        if (err != null) {
          out.completeExceptionally(err);
          return;
        }
        try {
          CompletionStage<Object> call = (CompletionStage<Object>) (d.allowed() ? mi.proceed() : refuse(d.decision(), mi, plan));
          if (call == null) {
            out.complete(null);
            return;
          }
          if (!d.allowed() || !plan.costs) {
            call.whenComplete((v, e) -> complete(out, v, e));
            return;
          }
          call.whenComplete((v, e) -> {
            if (e != null) {
              out.completeExceptionally(e);
              return;
            }
            CompletableFuture.runAsync(() -> plan.settle(d, ctx, v)).whenComplete((x, se) -> out.complete(v));
          });
        } catch (Throwable t) {
          out.completeExceptionally(t);
        }
      });
      return out;
    }

    private static void complete(CompletableFuture<Object> out, Object v, Throwable e) {
      if (e != null) {
        out.completeExceptionally(e);
      } else {
        out.complete(v);
      }
    }
  }

  /** One method's annotations, compiled. */
  final class Plan {
    final Method method;
    final Kind kind;
    final boolean reactive;
    /** How long a refused call may wait (a single annotation's {@code timeout}), or null. */
    final java.time.Duration timeout;
    /** The waiting limiter of the single annotation with a timeout, or null. */
    final dev.sluice.compose.WaitingLimiter waiting;
    /** With a timeout and a policyExpression: a waiting limiter per chosen policy's limiter. */
    private final Map<RateLimiter, dev.sluice.compose.WaitingLimiter> waitings = new ConcurrentHashMap<>();
    /** Each annotation's policyExpression, null where it has none. */
    final Expression[] policyExpressions;
    /** Each annotation's choice among sluice.policies, null where it has no policyExpression. */
    final PolicyChoice[] choices;
    final Method fallback;
    final RateLimiter[] limiters;
    final Expression[] keys;
    final Expression[] permits;
    /** Each annotation's {@code cost}, null where it has none. */
    final Expression[] cost;
    /** Whether any annotation has a cost (else nothing is settled). */
    final boolean costs;
    /** Each cost expression reports its first failure only. */
    final AtomicBoolean[] costWarned;

    Plan(Method invoked, Class<?> targetClass) {
      this.method = ClassUtils.getMostSpecificMethod(invoked, targetClass);
      this.kind = kind(method);
      this.reactive = kind != Kind.BLOCKING;
      List<RateLimited> all = new ArrayList<>(annotations(invoked, targetClass));
      String where = where(targetClass, method);
      limiters = new RateLimiter[all.size()];
      keys = new Expression[all.size()];
      permits = new Expression[all.size()];
      cost = new Expression[all.size()];
      costWarned = new AtomicBoolean[all.size()];
      policyExpressions = new Expression[all.size()];
      choices = new PolicyChoice[all.size()];
      boolean anyCost = false;
      String fallbackName = "";
      for (int i = 0; i < all.size(); i++) {
        RateLimited a = all.get(i);
        limiters[i] = limiter(registry, a, where);
        keys[i] = parser.parseExpression(a.key());
        permits[i] = parser.parseExpression(a.permits());
        costWarned[i] = new AtomicBoolean();
        if (!a.policyExpression().isEmpty()) {
          policyExpressions[i] = parser.parseExpression(a.policyExpression());
          choices[i] = new PolicyChoice(where + ": policyExpression '" + a.policyExpression() + "'", limiters[i], registry);
        }
        if (!a.cost().isEmpty()) {
          cost[i] = parser.parseExpression(a.cost());
          anyCost = true;
        }
        if (!a.fallbackMethod().isEmpty()) {
          if (!fallbackName.isEmpty() && !fallbackName.equals(a.fallbackMethod())) {
            throw new IllegalStateException(where + " names two fallback methods, '" + fallbackName + "' and '"
                + a.fallbackMethod() + "'; a refusal can call only one");
          }
          fallbackName = a.fallbackMethod();
        }
      }
      this.costs = anyCost;
      if (anyCost && kind == Kind.FLUX) {
        throw new IllegalStateException(where + ": a cost on a Flux method; a stream has no one result to settle at, "
            + "so reserve its cost with permits and leave cost out");
      }
      this.timeout = timeout(all, where);
      this.waiting = timeout == null ? null : dev.sluice.compose.WaitingLimiter.builder(limiters[0]).build();
      this.fallback = fallbackName.isEmpty() ? null : fallback(targetClass, fallbackName, where);
    }

    /** The wait of a single annotation's {@code timeout}, or null when none has one. */
    private java.time.Duration timeout(List<RateLimited> all, String where) {
      return RateLimitedInterceptor.timeout(all, where);
    }

    private Method fallback(Class<?> targetClass, String name, String where) {
      Class<?>[] params = method.getParameterTypes();
      Class<?> returns = ClassUtils.resolvePrimitiveIfNecessary(method.getReturnType());
      Method wrongType = null;
      for (Method m : targetClass.getDeclaredMethods()) {
        Class<?>[] ps = m.getParameterTypes();
        if (m.getName().equals(name) && ps.length == params.length + 1
            && Arrays.equals(ps, 0, params.length, params, 0, params.length)
            && ps[params.length].isAssignableFrom(RateLimitExceededException.class)) {
          if (returns.isAssignableFrom(ClassUtils.resolvePrimitiveIfNecessary(m.getReturnType()))) {
            m.setAccessible(true);
            return m;
          }
          wrongType = m;
        }
      }
      if (wrongType != null) {
        throw new IllegalStateException(where + ": fallbackMethod '" + name + "' returns "
            + wrongType.getReturnType().getSimpleName() + ", but " + method.getName() + " returns "
            + method.getReturnType().getSimpleName() + " and a refusal answers with the fallback's result; "
            + "make " + name + " return " + method.getReturnType().getSimpleName()
            + (kind == Kind.MONO ? " (for example Mono.just(...))" : ""));
      }
      throw new IllegalStateException(where + ": fallbackMethod '" + name + "' not found; declare " + name + "("
          + String.join(", ", Arrays.stream(params).map(Class::getSimpleName).toList())
          + (params.length == 0 ? "" : ", ") + "RateLimitExceededException) returning "
          + method.getReturnType().getSimpleName() + " in " + targetClass.getName());
    }

    /**
     * After a call that returned {@code result} (a Mono's emitted value): settles the reservation of
     * each annotation with a cost at that cost, the others keep theirs. A cost that fails (throws,
     * is null, or is outside 0..the policy's limit, {@code Inputs.actual}) never fails the call: its
     * reservation stays charged and the expression's first failure is logged.
     */
    void settle(AllOf.Result r, MethodBasedEvaluationContext ctx, Object result) {
      if (!costs) {
        return;
      }
      ctx.setVariable("result", result);
      for (int i = 0; i < limiters.length; i++) {
        Ticket t = cost[i] == null ? null : r.legs().get(i).ticket().orElse(null);
        if (t == null) {
          continue; // no cost: the reservation stays; no ticket (failure mode open): nothing to settle
        }
        AllOf.Charge c = r.charges().get(i); // the policy charged: the expression's choice, when there is one
        long actual = cost(i, ctx, c.policy());
        if (actual != KEEP) {
          c.limiter().settle(t, actual);
        }
      }
    }

    private long cost(int i, MethodBasedEvaluationContext ctx, dev.sluice.Policy charged) {
      dev.sluice.Policy l = charged;
      try {
        Long n = cost[i].getValue(ctx, Long.class);
        if (n == null) {
          throw new IllegalArgumentException("it gave null");
        }
        return Inputs.actual(n, l.limit(), l.name());
      } catch (RuntimeException e) {
        if (costWarned[i].compareAndSet(false, true)) {
          LOG.log(System.Logger.Level.WARNING, "@RateLimited on " + method.getName() + ": cost '"
              + cost[i].getExpressionString() + "' failed (" + e.getMessage() + "); the reservation stays charged "
              + "(logged once)", e);
        }
        return KEEP;
      }
    }

    /**
     * The decision, asked when the returned supplier is called (keys and permits are evaluated now):
     * one annotation through its limiter's async method, several as one {@link AllOf} call (in-process
     * legs are decided on the calling thread, as a composition without shared state decides them).
     */
    Supplier<CompletionStage<AllOf.Result>> acquireAsync(MethodBasedEvaluationContext ctx) {
      List<AllOf.Charge> charges = charges(ctx);
      if (charges.size() == 1) {
        AllOf.Charge c = charges.get(0);
        if (waiting != null) {
          return () -> waiting(c).acquireAsync(c.key(), c.permits(), c.policy(), timeout).thenApply(d -> alone(c, d));
        }
        return () -> c.limiter().tryAcquireAsync(c.key(), c.permits(), c.policy()).thenApply(d -> alone(c, d));
      }
      return () -> CompletableFuture.completedFuture(AllOf.charge(charges));
    }

    AllOf.Result acquire(MethodBasedEvaluationContext ctx) {
      List<AllOf.Charge> charges = charges(ctx);
      if (charges.size() == 1) {
        AllOf.Charge c = charges.get(0);
        return alone(c, waiting != null ? waiting(c).acquire(c.key(), c.permits(), c.policy(), timeout)
            : c.limiter().tryAcquire(c.key(), c.permits(), c.policy()));
      }
      return AllOf.charge(charges);
    }

    /** The waiting limiter of the single charge {@code c}: its limiter's (the expression's choice, when there is one). */
    private dev.sluice.compose.WaitingLimiter waiting(AllOf.Charge c) {
      if (c.limiter() == limiters[0]) {
        return waiting;
      }
      return waitings.computeIfAbsent(c.limiter(), l -> dev.sluice.compose.WaitingLimiter.builder(l).build());
    }

    /** Each annotation a charge: its limiter (its policyExpression's choice, when it has one), its key, its permits. */
    private List<AllOf.Charge> charges(MethodBasedEvaluationContext ctx) {
      List<AllOf.Charge> charges = new ArrayList<>(limiters.length);
      for (int i = 0; i < limiters.length; i++) {
        long n = permits(i, ctx);
        RateLimiter l = choices[i] == null ? limiters[i] : choose(i, ctx, n);
        charges.add(new AllOf.Charge(l, key(i, ctx), n, registry.current(l)));
      }
      return charges;
    }

    /** The limiter of the policy annotation {@code i}'s policyExpression chooses; its policy when it chooses none. */
    private RateLimiter choose(int i, MethodBasedEvaluationContext ctx, long permits) {
      Object answer;
      try {
        answer = policyExpressions[i].getValue(ctx);
      } catch (RuntimeException e) {
        return choices[i].failed(e);
      }
      return choices[i].limiter(answer, permits);
    }

    private static AllOf.Result alone(AllOf.Charge c, Decision d) {
      return new AllOf.Result(List.of(c), List.of(d), d);
    }

    /** Annotation {@code i}'s key: its expression's result, a computed value ({@link RequestKeys#key(Object)}). */
    private String key(int i, MethodBasedEvaluationContext ctx) {
      return HttpRateLimit.normalize(RequestKeys.key(keys[i].getValue(ctx)));
    }

    private long permits(int i, MethodBasedEvaluationContext ctx) {
      Long n = permits[i].getValue(ctx, Long.class);
      if (n == null || n < 1) {
        throw new IllegalArgumentException("@RateLimited on " + method.getName() + ": permits '"
            + permits[i].getExpressionString() + "' gave " + n + "; a call costs at least 1 permit");
      }
      return n;
    }
  }
}
