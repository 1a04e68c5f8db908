package dev.sluice.spring;

import dev.sluice.guard.RateLimitExceededException;
import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Repeatable;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Charges a call of the annotated method (every public method of an annotated class) to a policy of
 * {@code sluice.policies} before it runs.
 *
 * <pre>{@code
 * @RateLimited(policy = "per-user", key = "#user.id")
 * @RateLimited(policy = "exports", key = "'all'", permits = "#rows.size()")
 * public Report export(User user, List<Row> rows) { ... }
 * }</pre>
 *
 * <p>Several annotations on one method must all allow, with no partial charge: they are one
 * {@code Composition} (a leg refusing refunds the legs already charged). A refusal calls
 * {@link #fallbackMethod()} when there is one, else throws {@link RateLimitExceededException}, which
 * Spring MVC and WebFlux answer with the 429 problem response and the limit headers (503 when the
 * store could not decide and the failure mode is closed).
 */
@Target({ElementType.METHOD, ElementType.TYPE})
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@Repeatable(RateLimited.List.class)
public @interface RateLimited {
  /**
   * The policy's name in {@code sluice.policies}. A name it does not have stops the application at
   * start, naming the method, the name and the policies there are. With {@link #policyExpression()},
   * the fallback: the policy of a call the expression chooses none for.
   */
  String policy();

  /**
   * The policy chosen per call, a SpEL expression like {@link #key()} answering a name of
   * {@code sluice.policies}: {@code "@plans.of(#tenant)"}. A call it fails on, answers null for,
   * names no configured policy for (or one below the call's permits) is charged to {@link #policy()}
   * instead, never let through; the first such call is logged. A budget is a policy's name and a
   * key: plans under different names count apart. Empty (the default): always {@link #policy()}.
   */
  String policyExpression() default "";

  /**
   * The key, a SpEL expression over the call: the arguments ({@code #p0}, {@code #a0}, or by name,
   * {@code #user.id}), beans ({@code @tenants.current()}) and {@code #root.methodName}. Default: one
   * key for every caller ({@code 'all'}). The result is charged as a computed value,
   * {@code value:<result>}, so that an argument a client filled cannot equal the key a rule keeps
   * for an address, a header or a principal. A null or blank result is the shared key
   * {@code unknown}; a long key is hashed.
   */
  String key() default "'all'";

  /** Permits the call costs, a SpEL expression like {@link #key()} giving a whole number; default 1. */
  String permits() default "1";

  /**
   * The call's actual cost, a SpEL expression evaluated after the method returned, over the
   * arguments and its return value {@code #result} (for a {@code Mono}, the value it emits): e.g.
   * {@code "#result.usage.totalTokens"}. The {@link #permits()} reserved before the call are settled
   * to it ({@code RateLimiter.settle}): the unused part goes back, an overrun is charged into debt.
   * With repeated annotations each one with a cost settles its own limit; the others keep their
   * charge. A method that throws, or a {@code Mono} that completes empty, keeps the reservation. A
   * cost that fails (throws, is null, is below 0 or above the policy's limit) never fails the call:
   * the reservation stays charged and the first failure is logged. Empty: no settlement.
   */
  String cost() default "";

  /**
   * A method of the same bean with the annotated method's parameters plus a last parameter of type
   * {@link RateLimitExceededException} (or a supertype), called instead when the call is refused;
   * it must return what the annotated method returns (a {@code Mono} for a {@code Mono} method, a
   * {@code Flux} for a {@code Flux} method, a {@code CompletionStage} for a {@code CompletionStage} method;
   * another type is an {@code IllegalStateException} at the first call, naming both types). Empty:
   * the refusal is thrown.
   */
  String fallbackMethod() default "";

  /**
   * How long a refused call may wait for its permits (Resilience4j's {@code timeoutDuration}): a
   * duration as the policies write it ({@code 500ms}, {@code 2s}, ISO-8601). The call is retried
   * after each refusal's retry-after while it fits in the timeout, through the core's
   * {@code WaitingLimiter}; a refusal whose wait exceeds what is left is answered at once. A blocking
   * method waits on its thread; a {@code Mono}, {@code Flux} or {@code CompletionStage} method waits
   * on no thread (the retry is scheduled). Only on a method with one {@code @RateLimited}. Empty (the
   * default): never wait.
   */
  String timeout() default "";

  /** The container of repeated {@link RateLimited} annotations. */
  @Target({ElementType.METHOD, ElementType.TYPE})
  @Retention(RetentionPolicy.RUNTIME)
  @Documented
  @Inherited
  @interface List {
    /** The annotations, all of which must allow. */
    RateLimited[] value();
  }
}
