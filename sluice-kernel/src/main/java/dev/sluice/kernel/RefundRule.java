package dev.sluice.kernel;

/**
 * Which finished requests get their permits back once the handler answered: the one rule of every
 * front end (the HTTP filters' {@code skipFailedRequests} / {@code skipSuccessfulRequests}, the Spring
 * starter's {@code skip-on-failure} / {@code skip-on-success}).
 */
public enum RefundRule {
  /** The permits stay charged, whatever the handler did. */
  NEVER,
  /** Refund when the handler threw or answered 5xx: a failed request does not count. */
  ON_FAILURE,
  /** Refund when the handler answered below 400: only failures count (a login throttle). */
  ON_SUCCESS;

  /**
   * The rule of two options that cannot both be on; {@code both} is the message of an
   * {@link IllegalStateException} when they are.
   */
  public static RefundRule of(boolean skipFailed, boolean skipSuccessful, String both) {
    if (skipFailed && skipSuccessful) {
      throw new IllegalStateException(both);
    }
    return skipFailed ? ON_FAILURE : skipSuccessful ? ON_SUCCESS : NEVER;
  }

  /**
   * Whether a request whose handler threw ({@code threw}) or answered {@code status} (negative or 0
   * when unknown) gets its permits back: a failure is a throw or 5xx, a success a status below 400
   * that is known and not a throw.
   */
  public boolean refunds(boolean threw, int status) {
    return switch (this) {
      case NEVER -> false;
      case ON_FAILURE -> threw || status >= 500;
      case ON_SUCCESS -> !threw && status > 0 && status < 400;
    };
  }
}
