package dev.sluice.quarkus;

import dev.sluice.Decision;
import dev.sluice.RateLimiter;
import dev.sluice.Ticket;
import dev.sluice.kernel.RefundRule;
import io.smallrye.mutiny.infrastructure.Infrastructure;
import dev.sluice.guard.RateLimitExceededException;
import dev.sluice.http.HttpRateLimit;
import dev.sluice.kernel.Keys;
import io.smallrye.mutiny.Uni;
import jakarta.annotation.Priority;
import jakarta.inject.Inject;
import jakarta.interceptor.AroundInvoke;
import jakarta.interceptor.Interceptor;
import jakarta.interceptor.InvocationContext;
import java.lang.reflect.Method;
import java.lang.reflect.Parameter;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Runs {@link RateLimited}: charges the call, then proceeds or refuses with
 * {@link RateLimitExceededException}. Synchronous methods are decided on the caller's thread;
 * {@code Uni} and {@code CompletionStage} methods on the limiter's async method, the call proceeding
 * when the decision arrives (no thread waits on the store).
 */
@RateLimited
@Interceptor
@Priority(Interceptor.Priority.PLATFORM_BEFORE + 100)
public class RateLimitedInterceptor {
  private final Sluice sluice;
  private final Map<Method, Plan> plans = new ConcurrentHashMap<>();

  @Inject
  RateLimitedInterceptor(Sluice sluice) {
    this.sluice = sluice;
  }

  /** What an annotated method means, worked out once: its limiter, where its key comes from, its permits. */
  record Plan(RateLimiter limiter, String literalKey, int argument, long permits, Kind kind, RefundRule refunds,
      boolean inMemory) {
    /**
     * A failed call's permits back when the plan says so (a refund is a synchronous store call: on a
     * shared store it runs on a worker thread, never on the caller's, which may be an event loop);
     * done when the refund is, or at once when none is due.
     */
    CompletionStage<Void> refundFailed(Decision d) {
      if (!refunds.refunds(true, -1) || d.ticket().isEmpty()) {
        return CompletableFuture.completedFuture(null);
      }
      Ticket ticket = d.ticket().get();
      if (inMemory) {
        limiter.refund(ticket);
        return CompletableFuture.completedFuture(null);
      }
      return CompletableFuture.runAsync(() -> limiter.refund(ticket), Infrastructure.getDefaultWorkerPool());
    }
  }

  enum Kind { SYNC, UNI, STAGE }

  @AroundInvoke
  Object charge(InvocationContext ctx) throws Exception {
    Method method = ctx.getMethod();
    Plan plan = plans.computeIfAbsent(method, m -> plan(m, annotation(ctx)));
    String key = HttpRateLimit.normalize(Keys.key(Keys.VALUE,
        plan.argument < 0 ? plan.literalKey : String.valueOf(ctx.getParameters()[plan.argument])));
    switch (plan.kind) {
      case UNI:
        return Uni.createFrom().completionStage(() -> plan.limiter.tryAcquireAsync(key, plan.permits, plan.limiter.policy()))
            .onItem().transformToUni(d -> {
              if (!d.allowed()) {
                return Uni.createFrom().failure(new RateLimitExceededException(d));
              }
              Uni<?> call;
              try {
                call = (Uni<?>) ctx.proceed();
              } catch (Exception e) {
                call = Uni.createFrom().failure(e);
              }
              return call.onFailure().call(e -> Uni.createFrom().completionStage(() -> plan.refundFailed(d)));
            });
      case STAGE:
        return plan.limiter.tryAcquireAsync(key, plan.permits, plan.limiter.policy()).thenCompose(d -> {
          if (!d.allowed()) {
            return CompletableFuture.failedFuture(new RateLimitExceededException(d));
          }
          CompletionStage<?> call;
          try {
            call = (CompletionStage<?>) ctx.proceed();
          } catch (Exception e) {
            call = CompletableFuture.failedFuture(e);
          }
          return call.handle((v, e) -> e == null ? CompletableFuture.<Object>completedFuture(v)
              : plan.refundFailed(d).<Object>thenCompose(x -> CompletableFuture.failedFuture(e)))
              .thenCompose(x -> x);
        });
      default:
        Decision d = plan.limiter.tryAcquire(key, plan.permits, plan.limiter.policy());
        if (!d.allowed()) {
          throw new RateLimitExceededException(d);
        }
        try {
          return ctx.proceed();
        } catch (Exception | Error e) {
          if (plan.refunds.refunds(true, -1)) { // a synchronous call: its refund on the same thread
            d.ticket().ifPresent(plan.limiter::refund);
          }
          throw e;
        }
    }
  }

  private static RateLimited annotation(InvocationContext ctx) {
    for (java.lang.annotation.Annotation a : ctx.getInterceptorBindings()) {
      if (a instanceof RateLimited r) {
        return r;
      }
    }
    RateLimited r = ctx.getMethod().getAnnotation(RateLimited.class);
    return r != null ? r : ctx.getMethod().getDeclaringClass().getAnnotation(RateLimited.class);
  }

  /** The plan of {@code method} under {@code a}; a wrong policy, key or permits is an error naming the method. */
  Plan plan(Method method, RateLimited a) {
    return plan(sluice, method, a);
  }

  static Plan plan(Sluice sluice, Method method, RateLimited a) {
    String where = where(method);
    RateLimiter limiter;
    try {
      limiter = sluice.limiter(a.policy());
    } catch (IllegalArgumentException e) {
      throw new IllegalStateException(where + ": " + e.getMessage(), e);
    }
    if (a.permits() < 1) {
      throw new IllegalStateException(where + ": permits is " + a.permits() + "; a call costs at least 1 permit");
    }
    String key = a.key();
    int argument = -1;
    if (key.startsWith("#")) {
      String ref = key.substring(1);
      Parameter[] ps = method.getParameters();
      for (int i = 0; i < ps.length; i++) {
        if (ps[i].getName().equals(ref) || String.valueOf(i).equals(ref)) {
          argument = i;
        }
      }
      if (argument < 0) {
        throw new IllegalStateException(where + ": key '" + key + "' names no parameter of the method"
            + " (compile with -parameters to name them, or give the position: #0)");
      }
    }
    Class<?> r = method.getReturnType();
    Kind kind = Uni.class.isAssignableFrom(r) ? Kind.UNI : CompletionStage.class.isAssignableFrom(r) ? Kind.STAGE : Kind.SYNC;
    RefundRule refunds = RefundRule.of(a.skipOnFailure(), false, where + ": skipOnFailure");
    return new Plan(limiter, key, argument, a.permits(), kind, refunds, "memory".equals(sluice.store().name()));
  }

  /** How a message names an annotated method: {@code @RateLimited on com.example.Reports.export}. */
  static String where(Method method) {
    return "@RateLimited on " + method.getDeclaringClass().getName() + "." + method.getName();
  }
}
