package dev.sluice.kernel;

import dev.sluice.internal.Checks;
import dev.sluice.internal.StoredId;

/**
 * The checks a front end applies to what its caller sends, before a limiter sees it, with the core's
 * own messages: the rules live once in the core (the limiters apply them too), and a front end that
 * turns a bad value into a 400 or a configuration error names the value and the rule exactly as a
 * limiter would. Every method throws {@link IllegalArgumentException} with that message.
 */
public final class Inputs {
  private Inputs() {}

  /** {@code value}, or a refusal saying that {@code what} is null. */
  public static <T> T notNull(String what, T value) {
    return Checks.notNull(what, value);
  }

  /** {@code key} when a limiter accepts it as a key (non-blank, well-formed UTF-16, not a stored id's stand-in). */
  public static String key(String key) {
    return Checks.key(key);
  }

  /** {@code permits} when it is 1 up to {@code maxPermits}, the most policy {@code policyName} grants at once. */
  public static long permits(long permits, long maxPermits, String policyName) {
    return Checks.permits(permits, maxPermits, policyName);
  }

  /** The refusal of a number of permits out of range, spelled as the caller sent it (a JSON {@code 1e30}). */
  public static IllegalArgumentException permitsOutOfRange(String permits, boolean belowOne, long maxPermits,
                                                           String policyName) {
    return Checks.permitsOutOfRange(permits, belowOne, maxPermits, policyName);
  }

  /** {@code actual} when a settlement may charge it: 0 up to {@code maxPermits}. */
  public static long actual(long actual, long maxPermits, String policyName) {
    return Checks.actual(actual, maxPermits, policyName);
  }

  /** The refusal of a settlement's actual cost out of range, spelled as the caller sent it. */
  public static IllegalArgumentException actualOutOfRange(String actual, boolean belowZero, long maxPermits,
                                                          String policyName) {
    return Checks.actualOutOfRange(actual, belowZero, maxPermits, policyName);
  }

  /** Index of the first unpaired surrogate in {@code s}, or -1: such a string is no key as it stands. */
  public static int unpairedSurrogate(String s) {
    return Checks.unpairedSurrogate(s);
  }

  /** {@code s} as it may appear in a message: quoted, escaped and cut at 64 characters. */
  public static String quote(String s) {
    return Checks.quote(s);
  }

  /**
   * The id a shared store keeps {@code key}'s budget under for policy {@code policyName}: 64 hex
   * digits, the same on every shared store; a caller that keeps a budget's identity without its key
   * (the service's refund tickets) keeps this.
   */
  public static String storedId(String policyName, String key) {
    return StoredId.key(policyName, key);
  }

  /** A key that shared stores resolve to the budget {@code storedId} names ({@link #storedId} returns it). */
  public static String storedIdKey(String storedId) {
    return StoredId.standIn(storedId);
  }
}
