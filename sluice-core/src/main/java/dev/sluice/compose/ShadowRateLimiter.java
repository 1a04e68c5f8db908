package dev.sluice.compose;

import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticket;
import dev.sluice.internal.Checks;
import java.util.concurrent.atomic.LongAdder;

/**
 * Shadow mode, for dark-launching a new limit: the candidate limiter is evaluated on every call but
 * never refuses anybody; what it would have refused is reported to a {@link Listener} and counted.
 *
 * <ul>
 *   <li>Alone ({@link dev.sluice.RateLimiters#shadow(RateLimiter, Listener)}): every call is
 *       allowed. When the candidate allows, its decision (and ticket) is returned as is; when it
 *       would refuse, the caller gets an allowed decision with no ticket (nothing was counted) and
 *       the listener gets the refusal.
 *   <li>Beside an enforcing limiter ({@link dev.sluice.RateLimiters#shadow(RateLimiter, RateLimiter, Listener)}):
 *       the enforcing limiter decides and its decision is returned; the candidate is evaluated on
 *       the same call under its own default policy. Refunds go to the enforcing limiter only.
 * </ul>
 * A candidate that throws is counted in {@link #candidateErrors()} and never affects the caller
 * (an {@link IllegalArgumentException} for the caller's own input is rethrown).
 */
public final class ShadowRateLimiter implements RateLimiter {
  private static final System.Logger LOG = System.getLogger(ShadowRateLimiter.class.getName());

  /** Told about each refusal the candidate would have made. Exceptions it throws are logged and ignored. */
  @FunctionalInterface
  public interface Listener {
    /** {@code key} is null unless keys were opted in. */
    void onWouldRefuse(Decision wouldBe, String key);
  }

  private final RateLimiter candidate;
  private final RateLimiter enforcing;
  private final Listener listener;
  private final boolean includeKeys;
  private final LongAdder evaluated = new LongAdder();
  private final LongAdder wouldRefuse = new LongAdder();
  private final LongAdder candidateErrors = new LongAdder();

  ShadowRateLimiter(RateLimiter candidate, RateLimiter enforcing, Listener listener, boolean includeKeys) {
    this.candidate = Checks.notNull("candidate", candidate);
    this.enforcing = enforcing;
    this.listener = Checks.notNull("listener", listener);
    this.includeKeys = includeKeys;
  }

  /** Shadow mode over {@code candidate} alone; keys reach the listener only if {@code includeKeys}. */
  public static ShadowRateLimiter of(RateLimiter candidate, Listener listener, boolean includeKeys) {
    return new ShadowRateLimiter(candidate, null, listener, includeKeys);
  }

  /** {@code enforcing} decides; {@code candidate} is evaluated beside it. */
  public static ShadowRateLimiter beside(RateLimiter enforcing, RateLimiter candidate, Listener listener, boolean includeKeys) {
    return new ShadowRateLimiter(candidate, Checks.notNull("enforcing", enforcing), listener, includeKeys);
  }

  @Override public Policy policy() {
    return enforcing != null ? enforcing.policy() : candidate.policy();
  }

  @Override public Decision tryAcquire(String key, long permits, Policy p) {
    if (enforcing != null) {
      Decision d = enforcing.tryAcquire(key, permits, p);
      evaluate(key, permits, candidate.policy());
      return d;
    }
    Decision c = evaluate(key, permits, p);
    if (c != null && c.allowed()) {
      return c;
    }
    // Would refuse (or threw): allowed, with no ticket, since nothing was counted.
    return Decision.allowed(p, c != null ? c.remaining() : 0, c != null ? c.resetAtMicros() : 0, null);
  }

  /** The candidate's decision, or null when it threw. */
  private Decision evaluate(String key, long permits, Policy p) {
    Decision c;
    try {
      c = candidate.tryAcquire(key, permits, p);
    } catch (IllegalArgumentException e) {
      throw e;
    } catch (RuntimeException e) {
      candidateErrors.increment();
      LOG.log(System.Logger.Level.DEBUG, "shadow candidate threw; ignored", e);
      return null;
    }
    evaluated.increment();
    if (!c.allowed()) {
      wouldRefuse.increment();
      try {
        listener.onWouldRefuse(c, includeKeys ? key : null);
      } catch (Throwable t) {
        LOG.log(System.Logger.Level.WARNING, "shadow listener threw; ignored", t);
      }
    }
    return c;
  }

  @Override public Decision peek(String key, Policy p) {
    if (enforcing != null) {
      return enforcing.peek(key, p);
    }
    Decision c = candidate.peek(key, p);
    return c.allowed() ? c : Decision.allowed(p, c.remaining(), c.resetAtMicros(), null);
  }

  @Override public Refund refund(Ticket ticket) {
    return enforcing != null ? enforcing.refund(ticket) : candidate.refund(ticket);
  }

  /** Settles into the enforcing limiter only, as a refund does. */
  @Override public Settlement settle(Ticket ticket, long actualPermits) {
    return enforcing != null ? enforcing.settle(ticket, actualPermits) : candidate.settle(ticket, actualPermits);
  }

  @Override public void reset(String key, Policy p) {
    if (enforcing != null) {
      enforcing.reset(key, p);
      candidate.reset(key, candidate.policy());
    } else {
      candidate.reset(key, p);
    }
  }

  /** Calls the candidate evaluated. */
  public long evaluated() {
    return evaluated.sum();
  }

  /** Calls the candidate would have refused. */
  public long wouldRefuse() {
    return wouldRefuse.sum();
  }

  /** Calls on which the candidate threw. */
  public long candidateErrors() {
    return candidateErrors.sum();
  }

  /** {@code wouldRefuse / evaluated}: what enforcing the candidate would cost; 0 before the first call. */
  public double wouldRefuseRate() {
    long n = evaluated.sum();
    return n == 0 ? 0.0 : (double) wouldRefuse.sum() / n;
  }
}
