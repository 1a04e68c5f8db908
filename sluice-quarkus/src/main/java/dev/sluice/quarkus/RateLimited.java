package dev.sluice.quarkus;

import jakarta.enterprise.util.Nonbinding;
import jakarta.interceptor.InterceptorBinding;
import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Charges every call of the annotated bean method (or of every business method of the annotated
 * bean) to {@link #policy()} under {@link #key()}; a refused call throws
 * {@link dev.sluice.guard.RateLimitExceededException}, which Quarkus REST answers with the same
 * 429/503 verdict as the HTTP rules ({@code dev.sluice.http.HttpVerdict}). A method returning
 * {@code Uni} or {@code CompletionStage} is decided on the limiter's async method, without blocking
 * the caller; a refusal is then the returned {@code Uni}'s or stage's failure.
 */
@InterceptorBinding
@Target({ElementType.METHOD, ElementType.TYPE})
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
public @interface RateLimited {
  /** The policy, a name from {@code sluice.policies}; checked at start. */
  @Nonbinding
  String policy() default "";

  /**
   * The key: a literal ({@code all}, the default: one budget for every caller), or {@code #name} /
   * {@code #0}, the value of the method's parameter of that name (compiled with {@code -parameters})
   * or position. Keys are namespaced as every front end's computed values are ({@code value:...}).
   */
  @Nonbinding
  String key() default "all";

  /** Permits each call costs; at least 1. */
  @Nonbinding
  long permits() default 1;

  /**
   * Give the permits back when the call fails: the method throws, or its {@code Uni} or stage fails
   * (the kernel's {@code RefundRule.ON_FAILURE}, as an HTTP rule's {@code skip-on-failure}). Off by
   * default: a call that throws stays charged, as under the Spring starter's {@code @RateLimited}.
   */
  @Nonbinding
  boolean skipOnFailure() default false;
}
