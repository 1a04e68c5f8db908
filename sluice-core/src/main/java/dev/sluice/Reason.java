package dev.sluice;

/** Why a {@link Decision} came out as it did. */
public enum Reason {
  /** Allowed: the request fit the limit. */
  WITHIN_LIMIT,
  /** Refused: the key is at its limit. */
  LIMIT_EXCEEDED,
  /** Refused: the memory tier's key table is full and the key is not tracked; nothing was evicted. */
  KEY_TABLE_FULL,
  /** The shared store could not be reached or answered with an error. */
  STORE_UNAVAILABLE,
  /** The shared store did not answer within the deadline. */
  TIMEOUT,
  /** Compare-and-set retries were exhausted on a contended key. */
  CONTENTION,
  /** The stored state is not what Sluice wrote (wrong type, malformed). Always refused. */
  CORRUPT_STATE,
  /** The clock reading is negative, ran backwards beyond tolerance or is otherwise implausible. Always refused. */
  INVALID_CLOCK;

  /** True for the reasons that describe trouble with the store or clock rather than the caller's rate. */
  public boolean isFailure() {
    return this != WITHIN_LIMIT && this != LIMIT_EXCEEDED && this != KEY_TABLE_FULL;
  }
}
