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
 *       decision {@link Path#FALLBACK}: available, approximate (per instance).
 * </ul>
 * {@link Reason#CORRUPT_STATE}, {@link Reason#INVALID_CLOCK} and {@link Reason#CONTENTION} always fail
 * closed, whatever the mode: the first two are a state that must not be trusted, not an outage that
 * allowing would bridge, and contention past the retries means a hot key, which is exactly when a
 * limiter must not let everyone through.
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
    return new Open(alert);
  }

  static FailureMode fallback(RateLimiter local) {
    return new Fallback(local);
  }

  /**
   * The decision for a failed check. {@code nowMicros} is the caller's best clock reading (used for
   * {@code resetAt} of a closed refusal).
   */
  Decision decide(Policy policy, String key, long permits, Reason reason, Throwable cause, long nowMicros);

  /** True for the reasons every mode refuses: corrupt state, an invalid clock, contention. */
  static boolean alwaysClosed(Reason reason) {
    return reason == Reason.CORRUPT_STATE || reason == Reason.INVALID_CLOCK || reason == Reason.CONTENTION;
  }

  /** A user hook told about each check decided by the failure mode. Exceptions it throws are logged and ignored. */
  @FunctionalInterface
  interface FailureAlert {
    void onFailure(Policy policy, Reason reason, Throwable cause);
  }

  record Closed(Duration retryAfter) implements FailureMode {
    public Closed {
      Checks.notNull("retryAfter", retryAfter);
      if (retryAfter.compareTo(Duration.ofMillis(1)) < 0) {
        throw new IllegalArgumentException("closed retryAfter " + retryAfter + " is under 1 ms; a refusal must ask for at least 1 ms");
      }
    }

    @Override public Decision decide(Policy policy, String key, long permits, Reason reason, Throwable cause, long nowMicros) {
      long retry = retryAfter.toNanos() / 1_000;
      return Decision.of(false, reason, Path.FAILURE_MODE, policy, 0, nowMicros + retry, retry, null);
    }
  }

  record Open(FailureAlert alert) implements FailureMode {
    private static final System.Logger LOG = System.getLogger(FailureMode.class.getName());

    public Open {
      Objects.requireNonNull(alert, "alert");
    }

    @Override public Decision decide(Policy policy, String key, long permits, Reason reason, Throwable cause, long nowMicros) {
      if (alwaysClosed(reason)) {
        return FailureMode.closed().decide(policy, key, permits, reason, cause, nowMicros);
      }
      try {
        alert.onFailure(policy, reason, cause);
      } catch (Throwable t) {
        LOG.log(System.Logger.Level.WARNING, "failure alert hook threw; ignored", t);
      }
      return Decision.of(true, reason, Path.FAILURE_MODE, policy, 0, nowMicros, 0, null);
    }
  }

  record Fallback(RateLimiter local) implements FailureMode {
    private static final System.Logger LOG = System.getLogger(FailureMode.class.getName());

    public Fallback {
      Objects.requireNonNull(local, "local");
    }

    @Override public Decision decide(Policy policy, String key, long permits, Reason reason, Throwable cause, long nowMicros) {
      if (alwaysClosed(reason)) {
        return FailureMode.closed().decide(policy, key, permits, reason, cause, nowMicros);
      }
      try {
        return local.tryAcquire(key, permits, policy).withPath(Path.FALLBACK);
      } catch (IllegalArgumentException e) {
        throw e;
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "fallback limiter threw; failing closed", e);
        return FailureMode.closed().decide(policy, key, permits, reason, cause, nowMicros);
      }
    }
  }
}
