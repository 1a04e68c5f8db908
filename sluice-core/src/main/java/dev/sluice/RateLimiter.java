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

  /** Forgets {@code key}'s state under the default policy: its next check starts fresh. */
  default void reset(String key) {
    reset(key, policy());
  }

  /** Forgets {@code key}'s state under {@code policy}. */
  void reset(String key, Policy policy);
}
