package dev.sluice;

import dev.sluice.internal.Checks;
import java.time.Duration;
import java.util.Objects;

/**
 * What a shared-store limiter decides when it cannot ask its store: the store is down, timed out,
 * contended past its retries, returned corrupt state, or the clock reading is invalid.
 *
 * <ul>
 *   <li>{@link #closed()} (the default): refuse, with the failure's {@link Reason} and a {@code retryAfter}.
 *   <li>{@link #open(FailureAlert)}: allow, with the failure's reason and {@link Path#FAILURE_MODE}, no ticket,
 *       and call the alert hook. An abuse throttle then never becomes an outage, at the price of not
 *       throttling while the store is down.
 *   <li>{@link #fallback(RateLimiter)}: decide with a local limiter (usually a memory tier) and mark the
 *       decision {@link Path#FALLBACK}: available, approximate (per instance). Its tickets refund into
 *       it, also after the store is back; a peek peeks it; a reset resets it too. A request the local
 *       limiter rejects (a key over its length cap, say) is refused closed: an outage never throws.
 * </ul>
 * {@link Reason#CORRUPT_STATE}, {@link Reason#INVALID_CLOCK} and {@link Reason#CONTENTION} always fail
 * closed, whatever the mode: the first two are a state that must not be trusted, not an outage that
 * allowing would bridge, and contention past the retries means a hot key, which is exactly when a
 * limiter must not let everyone through.
 *
 * <p>Every mode has a {@link #retryAfter()}: the wait of each refusal it makes (every refusal of
 * closed; the always-closed reasons and a fallback that cannot decide, for the others), 1 s unless set.
 * Every store-backed limiter decides its failures here and nowhere else.
 */
public sealed interface FailureMode permits FailureMode.Closed, FailureMode.Open, FailureMode.Fallback {

  /** Default retry-after of a closed refusal: 1 second. */
  Duration DEFAULT_CLOSED_RETRY = Duration.ofSeconds(1);

  static FailureMode closed() {
    return new Closed(DEFAULT_CLOSED_RETRY);
  }

  static FailureMode closed(Duration retryAfter) {
    return new Closed(retryAfter);
  }

  static FailureMode open(FailureAlert alert) {
    return new Open(alert, DEFAULT_CLOSED_RETRY);
  }

  /** {@link #open(FailureAlert)} whose always-closed refusals ask for {@code retryAfter}. */
  static FailureMode open(FailureAlert alert, Duration retryAfter) {
    return new Open(alert, retryAfter);
  }

  static FailureMode fallback(RateLimiter local) {
    return new Fallback(local, DEFAULT_CLOSED_RETRY);
  }

  /** {@link #fallback(RateLimiter)} whose closed refusals ask for {@code retryAfter}. */
  static FailureMode fallback(RateLimiter local, Duration retryAfter) {
    return new Fallback(local, retryAfter);
  }

  /** The wait of the refusals this mode makes. */
  Duration retryAfter();

  /**
   * The decision for a failed check. {@code nowMicros} is the caller's best clock reading (used for
   * {@code resetAt} of a closed refusal). Never throws.
   */
  Decision decide(Policy policy, String key, long permits, Reason reason, Throwable cause, long nowMicros);

  /** The answer to a peek whose store failed: what {@link #decide} would say, without charging anything. Never throws. */
  default Decision peek(Policy policy, String key, Reason reason, Throwable cause, long nowMicros) {
    return decide(policy, key, 1, reason, cause, nowMicros);
  }

  /**
   * A refund of a ticket the limiter did not issue: the fallback's own tickets go back to it, any
   * other is {@link Refund#NO_EFFECT} (and stays refundable where it belongs). Never throws.
   */
  default Refund refundForeign(Ticket ticket) {
    return Refund.NO_EFFECT;
  }

  /**
   * A settlement of a ticket the limiter did not issue ({@code actualPermits} already validated): the
   * fallback's own tickets settle into it, any other is {@link Settlement#NO_EFFECT}. Never throws.
   */
  default Settlement settleForeign(Ticket ticket, long actualPermits) {
    return Settlement.NO_EFFECT;
  }

  /** Called after a limiter reset {@code key}: the fallback forgets its count too. Never throws. */
  default void reset(String key, Policy policy) {}

  /** True for the reasons every mode refuses: corrupt state, an invalid clock, contention. */
  static boolean alwaysClosed(Reason reason) {
    return reason == Reason.CORRUPT_STATE || reason == Reason.INVALID_CLOCK || reason == Reason.CONTENTION;
  }

  /** A user hook told about each check decided by the failure mode. Exceptions it throws are logged and ignored. */
  @FunctionalInterface
  interface FailureAlert {
    void onFailure(Policy policy, Reason reason, Throwable cause);
  }

  /** Refuses every failed check. */
  record Closed(Duration retryAfter) implements FailureMode {
    public Closed {
      checkRetry(retryAfter);
    }

    @Override public Decision decide(Policy policy, String key, long permits, Reason reason, Throwable cause, long nowMicros) {
      return refuse(retryAfter, policy, reason, nowMicros);
    }
  }

  /** Allows failed checks (but the always-closed reasons) and tells the alert. */
  record Open(FailureAlert alert, Duration retryAfter) implements FailureMode {
    private static final System.Logger LOG = System.getLogger(FailureMode.class.getName());

    public Open {
      Objects.requireNonNull(alert, "alert");
      checkRetry(retryAfter);
    }

    @Override public Decision decide(Policy policy, String key, long permits, Reason reason, Throwable cause, long nowMicros) {
      if (alwaysClosed(reason)) {
        return refuse(retryAfter, policy, reason, nowMicros);
      }
      try {
        alert.onFailure(policy, reason, cause);
      } catch (Throwable t) {
        LOG.log(System.Logger.Level.WARNING, "failure alert hook threw; ignored", t);
      }
      return Decision.builder(policy).allowed(reason).path(Path.FAILURE_MODE).resetAtMicros(nowMicros).build();
    }
  }

  /** Decides failed checks (but the always-closed reasons) with a local limiter. */
  record Fallback(RateLimiter local, Duration retryAfter) implements FailureMode {
    private static final System.Logger LOG = System.getLogger(FailureMode.class.getName());

    public Fallback {
      Objects.requireNonNull(local, "local");
      checkRetry(retryAfter);
    }

    @Override public Decision decide(Policy policy, String key, long permits, Reason reason, Throwable cause, long nowMicros) {
      if (alwaysClosed(reason)) {
        return refuse(retryAfter, policy, reason, nowMicros);
      }
      try {
        return local.tryAcquire(key, permits, policy).withPath(Path.FALLBACK);
      } catch (RuntimeException e) {
        // The local limiter rejects what the store accepts (a key over its length cap, a policy it
        // cannot run) or broke: the store's outage must still be a decision, never an exception.
        LOG.log(System.Logger.Level.DEBUG, "fallback limiter could not decide; failing closed", e);
        return refuse(retryAfter, policy, reason, nowMicros);
      }
    }

    @Override public Decision peek(Policy policy, String key, Reason reason, Throwable cause, long nowMicros) {
      if (alwaysClosed(reason)) {
        return refuse(retryAfter, policy, reason, nowMicros);
      }
      try {
        return local.peek(key, policy).withPath(Path.FALLBACK);
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.DEBUG, "fallback limiter could not peek; failing closed", e);
        return refuse(retryAfter, policy, reason, nowMicros);
      }
    }

    @Override public Refund refundForeign(Ticket ticket) {
      try {
        return local.refund(ticket);
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "fallback limiter refund failed", e);
        return Refund.FAILED;
      }
    }

    @Override public Settlement settleForeign(Ticket ticket, long actualPermits) {
      try {
        return local.settle(ticket, actualPermits);
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "fallback limiter settlement failed", e);
        return Settlement.FAILED;
      }
    }

    @Override public void reset(String key, Policy policy) {
      try {
        local.reset(key, policy);
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "fallback limiter reset failed", e);
      }
    }
  }

  private static void checkRetry(Duration retryAfter) {
    Checks.atLeastOneMilli("failure-mode retryAfter", retryAfter, Checks.REFUSAL_WAIT);
  }

  private static Decision refuse(Duration retryAfter, Policy policy, Reason reason, long nowMicros) {
    long retry = retryAfter.toNanos() / 1_000;
    return Decision.builder(policy).refused(reason).path(Path.FAILURE_MODE).resetAtMicros(nowMicros + retry).retryAfterMicros(retry).build();
  }
}
