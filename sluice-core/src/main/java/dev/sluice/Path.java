package dev.sluice;

/** Which path served a {@link Decision}. */
public enum Path {
  /** The limiter's own store decided (memory table, Redis script, SQL statement). */
  PRIMARY,
  /**
   * The store failed and a local limiter decided: the fallback of {@link FailureMode#fallback}, or a
   * composition's local legs (see {@link dev.sluice.compose.Composition.Builder#failureMode}).
   */
  FALLBACK,
  /** The store failed and the failure mode decided without any store: closed refused, open allowed. */
  FAILURE_MODE,
  /** A local cache of a recent refusal answered without a round trip to the store. */
  NEAR_CACHE
}
