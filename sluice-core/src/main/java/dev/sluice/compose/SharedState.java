package dev.sluice.compose;

import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticket;
import dev.sluice.internal.Checks;
import java.util.concurrent.CompletionStage;

/**
 * The shared store a {@link Composition} consults before its local legs: the part that makes a
 * limit hold across every process behind a load balancer.
 *
 * <p>The usual implementation is {@link #of(RateLimiter)} over a Redis, PostgreSQL or versioned-store
 * limiter. Unlike a bare "check and increment" adapter, a Sluice limiter can refund, so a reservation
 * released through the composition (or a call a local leg refused) gives its permits back to the
 * shared budget too.
 *
 * <p><b>Synchronous or not.</b> An adapter that cannot answer on the calling thread says so through
 * {@link #isSynchronous()}; a composition over it then throws {@link IllegalStateException} from every
 * synchronous method ({@code tryAcquire}, {@code peek}, {@code reserve}) instead of guessing an answer,
 * and serves the asynchronous ones.
 *
 * <p>A decision served by the shared limiter's own failure mode or fallback ({@link dev.sluice.Path#FAILURE_MODE},
 * {@link dev.sluice.Path#FALLBACK}), or with a {@link dev.sluice.Reason#isFailure() failure reason}, is read
 * as "the store could not answer", and the composition's {@link dev.sluice.FailureMode} decides; so does an
 * exception. A {@link dev.sluice.Path#NEAR_CACHE} refusal (a {@link NearCachedRateLimiter} in front of the
 * store) is the store's own answer, remembered, and is honoured.
 */
public interface SharedState {

  /** True when {@link #check} and {@link #peek} answer on the calling thread. */
  boolean isSynchronous();

  /** The policy the shared store decides under; the composition's failure mode decides under it when the store cannot. */
  Policy policy();

  /** Charges {@code permits} for {@code key} in the shared store. Only called when {@link #isSynchronous()}. */
  Decision check(String key, long permits);

  /** Asynchronous {@link #check}; must not hold the calling thread while the store answers. */
  CompletionStage<Decision> checkAsync(String key, long permits);

  /** What {@link #check} of one permit would decide, without charging. Only called when {@link #isSynchronous()}. */
  Decision peek(String key);

  /** Gives a ticket issued by {@link #check} back to the shared store. Never throws. */
  Refund refund(Ticket ticket);

  /**
   * Settles a ticket issued by {@link #check} at its actual cost ({@link RateLimiter#settle}). Never
   * throws for store trouble. The default refunds a settlement at 0 and reports any other as
   * {@link Settlement#FAILED} (the reservation stays the charge).
   */
  default Settlement settle(Ticket ticket, long actualPermits) {
    return actualPermits == 0 ? Settlement.of(refund(ticket)) : Settlement.FAILED;
  }

  /** Forgets {@code key}'s shared state. */
  void reset(String key);

  /** A synchronous adapter over {@code shared} (its default policy), with refunds. */
  static SharedState of(RateLimiter shared) {
    return new LimiterSharedState(Checks.notNull("shared", shared), true);
  }

  /**
   * An asynchronous-only adapter over {@code shared}: every check goes through
   * {@link RateLimiter#tryAcquireAsync}, and the composition's synchronous methods throw.
   */
  static SharedState async(RateLimiter shared) {
    return new LimiterSharedState(Checks.notNull("shared", shared), false);
  }
}

/** {@link SharedState} over any {@link RateLimiter}. */
final class LimiterSharedState implements SharedState {
  private final RateLimiter shared;
  private final boolean synchronous;

  LimiterSharedState(RateLimiter shared, boolean synchronous) {
    this.shared = shared;
    this.synchronous = synchronous;
  }

  @Override public boolean isSynchronous() {
    return synchronous;
  }

  @Override public Policy policy() {
    return shared.policy();
  }

  @Override public Decision check(String key, long permits) {
    requireSync("check");
    return shared.tryAcquire(key, permits);
  }

  @Override public CompletionStage<Decision> checkAsync(String key, long permits) {
    return shared.tryAcquireAsync(key, permits);
  }

  @Override public Decision peek(String key) {
    requireSync("peek");
    return shared.peek(key);
  }

  @Override public Refund refund(Ticket ticket) {
    try {
      return shared.refund(ticket);
    } catch (RuntimeException e) {
      return Refund.FAILED;
    }
  }

  @Override public Settlement settle(Ticket ticket, long actualPermits) {
    try {
      return shared.settle(ticket, actualPermits);
    } catch (RuntimeException e) {
      return Settlement.FAILED;
    }
  }

  @Override public void reset(String key) {
    shared.reset(key);
  }

  private void requireSync(String what) {
    if (!synchronous) {
      throw new IllegalStateException("this shared state is asynchronous; " + what + " cannot answer synchronously: use the async form");
    }
  }

  @Override public String toString() {
    return "SharedState[" + shared.policy().name() + (synchronous ? "" : ", async") + "]";
  }
}
