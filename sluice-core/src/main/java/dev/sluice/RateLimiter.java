package dev.sluice;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * Decides whether a key may spend permits now. Implementations: the memory tier
 * ({@link dev.sluice.memory.MemoryRateLimiter}), Redis, PostgreSQL and any versioned store.
 *
 * <p><b>Contract.</b> Load, store and clock trouble never throw: they become a {@link Decision}
 * under the limiter's {@link FailureMode}, with a {@link Reason} that says what happened. Programmer
 * errors throw {@link IllegalArgumentException} at once, also from the async methods: a null, empty
 * or blank key, a key with an unpaired surrogate, a key over the memory tier's length cap, or permits
 * below 1 or above what the policy can ever grant.
 *
 * <p><b>Identity.</b> A key's budget is identified by the policy's name and the key, on every
 * backend. The same key under a policy of another name (a per-call override) is an independent
 * budget, decided by the same limiter and the same store connection. A policy of the same name with
 * other numbers is the same budget: its numbers apply to the existing state at the next hit (a
 * lowered limit refuses at once when the key is over it, a raised one admits more), never a reset.
 * The same name with another algorithm finds a state of another shape, which counts as absent: it
 * starts afresh, and its first write replaces the other's.
 */
public interface RateLimiter {

  /** The default policy of this limiter. */
  Policy policy();

  /** {@code tryAcquire(key, 1)}. */
  default Decision tryAcquire(String key) {
    return tryAcquire(key, 1, policy());
  }

  /** Spends {@code permits} for {@code key} under the default policy if they fit. */
  default Decision tryAcquire(String key, long permits) {
    return tryAcquire(key, permits, policy());
  }

  /** Spends {@code permits} for {@code key} under {@code policy} (a per-call override) if they fit. */
  Decision tryAcquire(String key, long permits, Policy policy);

  /**
   * The verdict of {@link #tryAcquire(String, long)} alone: true when the permits were counted. No
   * ticket, so nothing to refund. The memory tier answers this without allocating; other limiters
   * answer {@code tryAcquire(key, permits).allowed()}.
   */
  default boolean tryConsume(String key, long permits) {
    return tryAcquire(key, permits, policy()).allowed();
  }

  /** Asynchronous {@link #tryAcquire(String, long)}; never completes exceptionally for store trouble. */
  default CompletionStage<Decision> tryAcquireAsync(String key, long permits) {
    return tryAcquireAsync(key, permits, policy());
  }

  /**
   * Asynchronous {@link #tryAcquire(String, long, Policy)}. Remote backends override this with a
   * path that holds no thread while waiting; the default decides synchronously.
   */
  default CompletionStage<Decision> tryAcquireAsync(String key, long permits, Policy policy) {
    return CompletableFuture.completedFuture(tryAcquire(key, permits, policy));
  }

  /** Remaining permits and reset time for {@code key}, without charging anything. */
  default Decision peek(String key) {
    return peek(key, policy());
  }

  /** Non-mutating check of {@code key} under {@code policy}: {@code allowed} says whether one permit would fit now. */
  Decision peek(String key, Policy policy);

  /**
   * Gives a ticket's permits back to the window or bucket they were counted in. Does nothing after
   * that window rolled. Never throws; a refund that fails leaves the limiter stricter, never weaker,
   * and says so in its result.
   */
  Refund refund(Ticket ticket);

  /**
   * Settles a ticket at the cost its work actually had, for limits on what requests cost (LLM tokens,
   * bytes) rather than how many there are: reserve an estimate with {@link #tryAcquire(String, long)},
   * then settle the actual. Below the reservation the difference goes back, as a partial
   * {@link #refund}; above it the difference is charged even past the limit, into debt, which the
   * next requests wait out (until refill pays it back, or the window ends). A budget's debt is at
   * most one more limit's worth (a window's count at most twice its limit; a bucket at most one
   * capacity below empty); an overrun beyond that is not charged.
   *
   * <p><b>Windows.</b> The unused part goes back only into the window the reservation was counted in,
   * while it is the current one: after that window rolled it does nothing (as a refund). An overrun
   * is charged to the window it was counted in while that is current, otherwise to the current
   * window (opening one if none is). Either way a late settlement makes the limiter stricter, never
   * weaker. Buckets (token bucket, GCRA) have no windows: both directions always apply.
   *
   * <p><b>Once.</b> A ticket settles or refunds once, whichever comes first; a second settlement, or
   * one after a refund, is {@link Settlement#NO_EFFECT}, as is a null ticket or one another limiter
   * issued. Never throws for store trouble ({@link Settlement#FAILED}); a bad {@code actualPermits}
   * (below 0, above the policy's limit) is a programmer error and throws
   * {@link IllegalArgumentException} naming the value and the rule, leaving the ticket unspent.
   *
   * <p>This default serves limiters that predate settlement: a settlement at 0 is a refund; any other
   * is {@link Settlement#FAILED}, and the reservation stays the charge. Every Sluice limiter overrides
   * it with a settlement in one store round trip.
   */
  default Settlement settle(Ticket ticket, long actualPermits) {
    if (ticket == null) {
      return Settlement.NO_EFFECT;
    }
    dev.sluice.internal.Checks.actual(actualPermits, ticket.policy().limit(), ticket.policy().name());
    return actualPermits == 0 ? Settlement.of(refund(ticket)) : Settlement.FAILED;
  }

  /** Forgets {@code key}'s state under the default policy: its next check starts fresh. */
  default void reset(String key) {
    reset(key, policy());
  }

  /** Forgets {@code key}'s state under {@code policy}. */
  void reset(String key, Policy policy);
}
