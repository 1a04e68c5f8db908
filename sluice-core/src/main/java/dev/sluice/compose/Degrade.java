package dev.sluice.compose;

/**
 * What a {@link Composition} does when its {@link SharedState} cannot answer (an exception, a timeout,
 * or a decision its limiter did not take on its own store). "I cannot answer" is not "no".
 */
public enum Degrade {
  /**
   * The default: decide with the local legs only and mark the decision {@link dev.sluice.Path#FALLBACK}.
   * The service stays available; the limit becomes per process until the store recovers. Failing every
   * request is usually worse than limiting slightly imperfectly.
   */
  LOCAL,
  /**
   * Refuse, marked {@link dev.sluice.Path#FAILURE_MODE}, until the shared store recovers. Safer, but a
   * store blip becomes an outage for every caller.
   */
  FAIL_CLOSED
}
