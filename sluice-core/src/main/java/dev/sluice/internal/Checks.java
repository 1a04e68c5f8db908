package dev.sluice.internal;

import dev.sluice.testing.ManualTicker;
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

  /**
   * Room every instant a step computes ahead of the clock stays within, 2^49 us (about 17.8 years):
   * a state's times and a decision's reset are at most this far after the reading, so that with a
   * reading at most {@link #MAX_CLOCK} they stay within {@link #MAX_STATE_WORD}.
   */
  public static final long MAX_AHEAD = 1L << 49;

  /**
   * Longest window or period, 2^48 us (about 8.9 years): the sliding window keeps a state for two
   * windows, which stays within {@link #MAX_AHEAD}.
   */
  public static final long MAX_WINDOW_MICROS = MAX_AHEAD / 2;

  /**
   * The latest clock reading any tier decides on, 2^52 - 2^49 us (the year 2094): a later reading
   * is refused as {@code INVALID_CLOCK}, so that an instant computed ahead of it (at most
   * {@link #MAX_AHEAD}) still fits a stored word.
   */
  public static final long MAX_CLOCK = MAX_STATE_WORD - MAX_AHEAD;

  /**
   * How far a state may lie ahead of the reading that decides on it beyond what its policy could have
   * written there (one hour): clocks of the processes sharing a store may disagree, or step back,
   * by this much. A state further ahead was not written by any clock within the tolerance (a
   * foreign value, a clock off by years) and is refused as {@code CORRUPT_STATE} on every tier
   * rather than trusted to lock a key for that long.
   */
  public static final long CLOCK_TOLERANCE_MICROS = 3_600_000_000L;

  /**
   * The longest a ticket can be used, one day: a ticket lives twice its algorithm's span
   * ({@code ReferenceModel.ticketExpiresAt}) but never longer, so the stores' spent records of
   * tickets (a Redis key, a PostgreSQL row, an entry in a versioned record) are swept within a day.
   */
  public static final long MAX_TICKET_LIFE_MICROS = 86_400_000_000L;

  /** The message for a ticket id that is not 32 lowercase hexadecimal digits. */
  public static String ticketId(String id) {
    return "ticket id " + (id == null ? "null" : quote(id)) + " is not 32 lowercase hexadecimal digits (Ticket.id() of an issued ticket)";
  }

  /** Whether {@code now} is a clock reading the tiers decide on: 1..{@link #MAX_CLOCK} us. */
  public static boolean validClock(long now) {
    return now > 0 && now <= MAX_CLOCK;
  }

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

  /** Longest tenant id, in UTF-16 code units: a tenant is stored as given, in the table's primary key. */
  public static final int MAX_TENANT_LENGTH = 256;

  /**
   * A tenant id, as strictly as a key: not blank, well-formed Unicode, and since it is stored as given
   * (PostgreSQL tenant mode), no NUL (which PostgreSQL text cannot hold) and at most
   * {@link #MAX_TENANT_LENGTH} code units (a primary-key entry must fit an index page). A tenant id
   * that broke one of these became a store failure on every decision, so under
   * {@code FailureMode.open} that tenant had no limit.
   */
  public static String tenant(String tenant) {
    if (tenant == null || tenant.isBlank()) {
      throw new IllegalArgumentException("tenant " + (tenant == null ? "null" : quote(tenant))
          + " is blank; tenant mode needs the current tenant from the supplier given to tenant(...)");
    }
    int bad = unpairedSurrogate(tenant);
    if (bad >= 0) {
      throw new IllegalArgumentException("tenant " + quote(tenant) + " has an unpaired UTF-16 surrogate at index " + bad
          + "; a tenant id must be well-formed Unicode so that distinct tenants stay distinct");
    }
    int nul = tenant.indexOf('\0');
    if (nul >= 0) {
      throw new IllegalArgumentException("tenant " + quote(tenant) + " contains NUL (U+0000) at index " + nul
          + "; a tenant id is stored as given and the store cannot hold NUL: remove it, or map tenants to ids");
    }
    if (tenant.length() > MAX_TENANT_LENGTH) {
      throw new IllegalArgumentException("tenant " + quote(tenant) + " is " + tenant.length() + " UTF-16 code units long; "
          + "a tenant id is stored as given in the table's primary key and may be at most " + MAX_TENANT_LENGTH
          + ": use a shorter id, or map tenants to ids");
    }
    return tenant;
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

  /**
   * The actual cost a ticket settles at ({@code RateLimiter.settle}): 0 (the work cost nothing) up to
   * the policy's limit, the most one reservation can ever hold. A settlement charges at most one
   * limit's worth, so no caller-supplied number can push a budget's debt (and the stored state)
   * past the ceiling every backend computes exactly.
   */
  public static long actual(long actual, long maxPermits, String policyName) {
    if (actual < 0 || actual > maxPermits) {
      throw actualOutOfRange(Long.toString(actual), actual < 0, maxPermits, policyName);
    }
    return actual;
  }

  /**
   * The refusal of a whole-number actual out of range, spelled as the caller received it: for a
   * value no {@code long} holds (a JSON {@code 18446744073709551616}), which is too large, not "not a whole number".
   */
  public static IllegalArgumentException actualOutOfRange(String actual, boolean belowZero, long maxPermits, String policyName) {
    if (belowZero) {
      return new IllegalArgumentException("actual permits " + actual + " is below 0; settle at the cost the work had, "
          + "0 when it cost nothing");
    }
    return new IllegalArgumentException("actual permits " + actual + " exceeds " + maxPermits
        + ", the most policy '" + policyName + "' can ever grant at once; a settlement charges at most one limit's worth, "
        + "so settle at most " + maxPermits + " (or split the cost over more reservations)");
  }

  /**
   * What a settlement of {@code ticket} at {@code actual} changes, actual minus the reservation (a
   * ticket's permits count at most the limit, as in a refund), after {@link #actual} checked the
   * actual against the ticket's policy.
   */
  public static long settlementDelta(dev.sluice.Ticket ticket, long actual) {
    dev.sluice.Policy p = ticket.policy();
    return actual(actual, p.limit(), p.name()) - Math.min(ticket.permits(), p.limit());
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

  /** {@code value} within {@code min..max}, or an error naming it, the range and {@code why} the range is bounded. */
  public static int range(String what, int value, int min, int max, String why) {
    if (value < min || value > max) {
      throw new IllegalArgumentException(what + " " + value + " is outside " + min + ".." + max + "; " + why);
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
    if (micros > MAX_WINDOW_MICROS) {
      throw new IllegalArgumentException(what + " " + window + " is too long; at most 2^48 microseconds (about 8.9 years), "
          + "so that every instant a limiter computes ahead of its clock stays exact");
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

  /** Guards a count or rate that the algorithms add to others: at most 2^52 (see {@link #MAX_EXACT}). */
  public static long exact(String what, String name, long value, String fix) {
    if (value > MAX_EXACT) {
      throw new IllegalArgumentException(what + ": " + name + " " + value + " exceeds 2^52 (" + MAX_EXACT
          + "), the exact-integer range every backend counts in, where it would overflow; " + fix);
    }
    return value;
  }

  /** A window or period in microseconds: {@link #MIN_WINDOW_MICROS}..{@link #MAX_WINDOW_MICROS}. */
  public static long windowMicros(String what, long micros) {
    if (micros < MIN_WINDOW_MICROS) {
      throw new IllegalArgumentException(what + " " + micros + " us is under 1 ms; use at least 1000 microseconds");
    }
    if (micros > MAX_WINDOW_MICROS) {
      throw new IllegalArgumentException(what + " " + micros + " us exceeds 2^48 microseconds (about 8.9 years), "
          + "so that every instant a limiter computes ahead of its clock stays exact; use a shorter one");
    }
    return micros;
  }

  /**
   * The start of a {@link dev.sluice.testing.ManualTicker}: a reading the limiters accept,
   * 1..{@link #MAX_CLOCK} us; every tier refuses others as {@code INVALID_CLOCK}.
   */
  public static long tickerStart(long micros) {
    if (!validClock(micros)) {
      throw new IllegalArgumentException("ticker start " + micros + " us is outside 1..2^52 - 2^49 (microseconds since the epoch, "
          + "up to the year 2094); limiters refuse such a reading as INVALID_CLOCK, "
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
