package dev.sluice.internal;

import java.util.regex.Pattern;

/**
 * Every programmer-error check of Sluice and the one place its messages are written.
 *
 * <p>A message names the offending value, the rule it broke and, where there is one, the fix. Tests
 * assert these messages verbatim, so change them here and in the tests together. Keys are quoted
 * only up to 64 characters so a hostile key cannot flood a log through an exception message.
 */
public final class Checks {
  /** Policy names: a letter or digit, then letters, digits, '.', '_', ':' or '-'; at most 64 characters. */
  public static final Pattern POLICY_NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:-]{0,63}");

  /**
   * The largest intermediate value any algorithm may compute, 2^52. Redis evaluates its scripts in
   * Lua, whose numbers are IEEE doubles that hold integers exactly only up to 2^53; keeping every
   * product at or under 2^52 leaves a factor of two of headroom for the sums that follow it.
   */
  public static final long MAX_EXACT = 1L << 52;
  /**
   * The largest word a stored state may hold, on every backend (StateFormat, the Lua scripts and the
   * SQL substitute it): the model keeps every state word within {@link #MAX_EXACT}, the bound of
   * every product an algorithm computes. A larger word is not a state Sluice wrote.
   */
  public static final long MAX_STATE_WORD = MAX_EXACT;

  /** Smallest window or period: one millisecond, in microseconds. */
  public static final long MIN_WINDOW_MICROS = 1_000;

  private Checks() {}

  public static String key(String key, int maxLength) {
    key(key);
    if (key.length() > maxLength) {
      throw new IllegalArgumentException("key " + quote(key) + " is " + key.length()
          + " UTF-16 code units long; the memory tier accepts at most " + maxLength
          + " (maxKeyLength): shorten or hash the key, or raise maxKeyLength");
    }
    return key;
  }

  /** Null, empty, blank and unpaired surrogates; no length cap (shared stores hash the key). */
  public static String key(String key) {
    if (key == null) {
      throw new IllegalArgumentException("key is null; a key must be a non-blank string");
    }
    if (key.isEmpty()) {
      throw new IllegalArgumentException("key is empty; a key must be a non-blank string");
    }
    if (key.isBlank()) {
      throw new IllegalArgumentException("key " + quote(key)
          + " is blank; a key must contain a non-whitespace character (whitespace inside a key is kept)");
    }
    int bad = unpairedSurrogate(key);
    if (bad >= 0) {
      throw new IllegalArgumentException("key " + quote(key) + " has an unpaired UTF-16 surrogate at index "
          + bad + "; a key must be well-formed Unicode so that distinct keys hash to distinct ids");
    }
    return key;
  }

  /** Index of the first unpaired surrogate in {@code s}, or -1. */
  public static int unpairedSurrogate(String s) {
    for (int i = 0, n = s.length(); i < n; i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c)) {
        if (i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) {
          i++;
        } else {
          return i;
        }
      } else if (Character.isLowSurrogate(c)) {
        return i;
      }
    }
    return -1;
  }

  public static long permits(long permits, long maxPermits, String policyName) {
    if (permits < 1 || permits > maxPermits) {
      throw permitsOutOfRange(Long.toString(permits), permits < 1, maxPermits, policyName);
    }
    return permits;
  }

  /**
   * The refusal of a whole number of permits out of range, spelled as the caller received it: for
   * a value no {@code long} holds (a JSON {@code 1e30}), which is too large, not "not a whole number".
   */
  public static IllegalArgumentException permitsOutOfRange(String permits, boolean belowOne, long maxPermits, String policyName) {
    if (belowOne) {
      return new IllegalArgumentException("permits " + permits + " is below 1; ask for at least one permit");
    }
    return new IllegalArgumentException("permits " + permits + " exceeds " + maxPermits
        + ", the most policy '" + policyName + "' can ever grant at once; such a request could never be allowed");
  }

  public static String policyName(String name) {
    if (name == null || name.isBlank()) {
      throw new IllegalArgumentException("policy name " + (name == null ? "null" : quote(name))
          + " is blank; a policy needs a name such as \"login\" or \"api.search\"");
    }
    if (!POLICY_NAME.matcher(name).matches()) {
      throw new IllegalArgumentException("policy name " + quote(name)
          + " is malformed; it must match [A-Za-z0-9][A-Za-z0-9._:-]{0,63}");
    }
    return name;
  }

  public static long positive(String what, long value) {
    if (value < 1) {
      throw new IllegalArgumentException(what + " " + value + " is not positive; it must be at least 1");
    }
    return value;
  }

  public static long window(String what, java.time.Duration window) {
    if (window == null) {
      throw new IllegalArgumentException(what + " is null; give a duration of at least 1 ms");
    }
    if (window.isNegative() || window.compareTo(java.time.Duration.ofMillis(1)) < 0) {
      throw new IllegalArgumentException(what + " " + window + " is under 1 ms; use at least Duration.ofMillis(1)");
    }
    long micros;
    try {
      micros = Math.multiplyExact(window.getSeconds(), 1_000_000L) + window.getNano() / 1_000;
    } catch (ArithmeticException e) {
      micros = Long.MAX_VALUE;
    }
    if (micros > MAX_EXACT) {
      throw new IllegalArgumentException(what + " " + window + " is too long; at most 2^52 microseconds (about 142 years)");
    }
    if (window.getNano() % 1_000 != 0) {
      throw new IllegalArgumentException(what + " " + window + " has sub-microsecond precision; Sluice keeps time in whole microseconds");
    }
    return micros;
  }

  /**
   * A deadline or other duration that must be at least 1 ms; {@code fix} completes the message
   * ("give every Redis call at least Duration.ofMillis(1)").
   */
  public static java.time.Duration atLeastOneMilli(String what, java.time.Duration value, String fix) {
    notNull(what, value);
    if (value.compareTo(java.time.Duration.ofMillis(1)) < 0) {
      throw new IllegalArgumentException(what + " " + value + " is under 1 ms; " + fix);
    }
    return value;
  }

  /** The fix a configured refusal wait under 1 ms is told ({@link #atLeastOneMilli}). */
  public static final String REFUSAL_WAIT = "a refusal must ask for at least 1 ms";

  /** The deadline of a store-backed call: 1 ms..1 min, the one rule of every backend's {@code timeout}. */
  public static java.time.Duration timeout(String what, java.time.Duration value) {
    notNull(what, value);
    if (value.compareTo(java.time.Duration.ofMillis(1)) < 0 || value.compareTo(java.time.Duration.ofMinutes(1)) > 0) {
      throw new IllegalArgumentException(what + " " + value + " is outside 1 ms..1 min; "
          + "every decision needs a deadline a caller can wait for");
    }
    return value;
  }

  /** Guards a product that the Redis scripts compute in doubles (see {@link #MAX_EXACT}). */
  public static void exactProduct(String what, long a, String aName, long b, String bName) {
    if (a > MAX_EXACT / b) {
      throw new IllegalArgumentException(what + ": " + aName + " " + a + " times " + bName + " " + b
          + " (microseconds) exceeds 2^52, the exact-integer range every backend computes in; "
          + "use a smaller " + aName + " or a shorter " + bName + " with proportional numbers");
    }
  }

  /**
   * The start of a {@link dev.sluice.ManualTicker}: a reading some limiter accepts, 1..2^52 us. The
   * memory tier refuses readings at or before the epoch, the shared stores also those past
   * {@link #MAX_EXACT}, each as {@code INVALID_CLOCK}.
   */
  public static long tickerStart(long micros) {
    if (micros < 1 || micros > MAX_EXACT) {
      throw new IllegalArgumentException("ticker start " + micros + " us is outside 1..2^52 (microseconds since the epoch); "
          + "limiters refuse such a reading as INVALID_CLOCK (every tier at or before the epoch, the shared stores past 2^52), "
          + "so every decision on this ticker would be refused; start at a real instant such as 1_700_000_000_000_000");
    }
    return micros;
  }

  public static <T> T notNull(String what, T value) {
    if (value == null) {
      throw new IllegalArgumentException(what + " is null");
    }
    return value;
  }

  /** A key as it may appear in a message: quoted, escaped and cut at 64 characters. */
  public static String quote(String s) {
    StringBuilder b = new StringBuilder(Math.min(s.length(), 64) + 8).append('"');
    int n = Math.min(s.length(), 64);
    for (int i = 0; i < n; i++) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') {
        b.append('\\').append(c);
      } else if (c < 0x20 || Character.isSurrogate(c) || c == 0x7f) {
        b.append(String.format("\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    b.append('"');
    if (s.length() > 64) {
      b.append("...(").append(s.length()).append(" chars)");
    }
    return b.toString();
  }
}
