package dev.sluice;

import dev.sluice.compose.Composition;
import dev.sluice.compose.NearCachedRateLimiter;
import dev.sluice.compose.ShadowRateLimiter;
import dev.sluice.compose.SharedState;
import dev.sluice.compose.TypedRateLimiter;
import dev.sluice.compose.WaitingLimiter;
import java.util.function.IntFunction;

/**
 * Entry points for putting limiters together: {@link #all composition}, {@link #keyed keyed
 * composition} through hashed slots, a {@link #sharedThenLocal shared store in front of local legs},
 * {@link #waiting bounded waiting}, {@link #typed typed limiters}, a {@link #nearCache near-cache of
 * refusals} and {@link #shadow shadow mode}. Everything here lives in {@code dev.sluice.compose};
 * these are shortcuts to its builders.
 */
public final class RateLimiters {
  private RateLimiters() {}

  /**
   * A composition allowing a call only when every leg allows it; a leg is never left charged for a
   * call another refused. See {@link Composition} for exactly what is atomic and what is compensated.
   */
  public static Composition all(RateLimiter... legs) {
    return Composition.builder().legs(legs).build();
  }

  /**
   * A keyed composition: keys hash (with a per-instance random seed) to {@code slots} slots, each of
   * which builds its legs from the factories on first use. Colliding keys share a budget; nothing is
   * evicted; a null key uses one shared default slot.
   */
  @SafeVarargs
  public static Composition keyed(int slots, IntFunction<? extends RateLimiter>... legFactories) {
    Composition.Builder b = Composition.builder().slots(slots);
    if (legFactories == null) {
      throw new IllegalArgumentException("leg factories is null");
    }
    for (IntFunction<? extends RateLimiter> f : legFactories) {
      b.legFactory(f);
    }
    return b.build();
  }

  /**
   * The shared store asked first (one round trip), then the local legs; when the store cannot answer,
   * the local legs decide alone (the composition's default failure mode, marked {@link Path#FALLBACK}).
   * For another {@link FailureMode} (closed, a fallback for the shared part), use {@link Composition#builder()}.
   */
  public static Composition sharedThenLocal(RateLimiter shared, RateLimiter... localLegs) {
    return Composition.builder().sharedState(SharedState.of(shared)).legs(localLegs).build();
  }

  /** Bounded waiting for permits on {@code limiter}, sync and async. */
  public static WaitingLimiter waiting(RateLimiter limiter) {
    return WaitingLimiter.builder(limiter).build();
  }

  /** A limiter over typed inputs whose key, limit and window are functions of the input. */
  public static <T> TypedRateLimiter.Builder<T> typed(String name, RateLimiter backing) {
    return TypedRateLimiter.builder(name, backing);
  }

  /** A bounded near-cache of refusals in front of {@code shared} (10,000 entries). */
  public static NearCachedRateLimiter nearCache(RateLimiter shared) {
    return NearCachedRateLimiter.builder(shared).build();
  }

  /** Shadow mode: {@code candidate} is evaluated and never refuses; would-be refusals go to {@code listener}. */
  public static ShadowRateLimiter shadow(RateLimiter candidate, ShadowRateLimiter.Listener listener) {
    return ShadowRateLimiter.of(candidate, listener, false);
  }

  /** {@code enforcing} decides; {@code candidate} is evaluated beside it and its would-be refusals reported. */
  public static ShadowRateLimiter shadow(RateLimiter enforcing, RateLimiter candidate, ShadowRateLimiter.Listener listener) {
    return ShadowRateLimiter.beside(enforcing, candidate, listener, false);
  }
}
