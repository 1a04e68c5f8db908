package dev.sluice.store;

import dev.sluice.Algorithm;
import dev.sluice.internal.Checks;

/**
 * The text a {@link VersionedStoreRateLimiter} stores as a record's value: the reference model's
 * {@code long[3]} state, tagged with its format version and algorithm, plus the clock reading of the
 * write that produced it.
 *
 * <pre>
 *   s1|&lt;algorithm&gt;|&lt;state0&gt;|&lt;state1&gt;|&lt;state2&gt;|&lt;writtenAt&gt;
 *   s1|fixed-window|1767225600000000|3|0|1767225600250000
 * </pre>
 *
 * <ul>
 *   <li>{@code s1}: the format version; anything else is malformed.
 *   <li>{@code <algorithm>}: {@link Algorithm#id()} of the policy that wrote it: {@code fixed-window},
 *       {@code sliding-window}, {@code token-bucket} or {@code gcra}.
 *   <li>three state fields, laid out as in {@link dev.sluice.model.ReferenceModel}; then
 *       {@code writtenAt}, the latest ticker reading (epoch microseconds) that wrote the record, which
 *       the limiter compares its own clock against.
 *   <li>every number is unsigned decimal without leading zeros, at most {@link Checks#MAX_STATE_WORD}
 *       (2^52), the bound of every stored word on every backend.
 *   <li>per algorithm: {@code state0} (window start, last update or theoretical arrival time) is
 *       positive except for the sliding window, whose aligned start may be 0 on a clock under one
 *       window; {@code state2} is 0 except for the sliding window (previous count); {@code writtenAt}
 *       is positive.
 * </ul>
 * Anything else, including extra or missing fields, whitespace or a sign, is malformed and is refused
 * with {@code Reason.CORRUPT_STATE}: a record Sluice did not write is never trusted.
 */
final class StateFormat {
  static final String VERSION_TAG = "s1";

  /** Result of {@link #decode}: the record is well formed and of this algorithm. */
  static final int OK = 0;
  /** The record is well formed but was written under another algorithm (the policy changed). */
  static final int FOREIGN = 1;
  /** The record is not one Sluice wrote. */
  static final int MALFORMED = 2;

  /** Longest well-formed value: "s1|sliding-window|" and four 16-digit fields with their bars. */
  static final int MAX_LENGTH = 18 + 4 * 16 + 3;

  private static final String[] IDS = {"fixed-window", "sliding-window", "token-bucket", "gcra"};

  private StateFormat() {}

  static String encode(Algorithm alg, long[] st, long writtenAt) {
    return new StringBuilder(96).append(VERSION_TAG).append('|').append(alg.id())
        .append('|').append(st[0]).append('|').append(st[1]).append('|').append(st[2])
        .append('|').append(writtenAt).toString();
  }

  /**
   * Parses {@code value} into {@code st} (3 longs) and returns {@link #OK}, {@link #FOREIGN} or
   * {@link #MALFORMED}; on {@code OK} and {@code FOREIGN}, {@code meta[0]} is the record's writtenAt.
   * {@code st} is meaningful only on {@code OK}.
   */
  static int decode(Algorithm alg, String value, long[] st, long[] meta) {
    if (value == null || value.length() > MAX_LENGTH || !value.startsWith("s1|")) {
      return MALFORMED;
    }
    int p = 3;
    int bar = value.indexOf('|', p);
    if (bar < 0) {
      return MALFORMED;
    }
    int algIndex = -1;
    for (int i = 0; i < IDS.length; i++) {
      if (value.regionMatches(p, IDS[i], 0, IDS[i].length()) && IDS[i].length() == bar - p) {
        algIndex = i;
        break;
      }
    }
    if (algIndex < 0) {
      return MALFORMED;
    }
    p = bar + 1;
    long s0 = 0, s1 = 0, s2 = 0, w = 0;
    for (int i = 0; i < 4; i++) {
      int end = i < 3 ? value.indexOf('|', p) : value.length();
      if (end < 0) {
        return MALFORMED;
      }
      long v = parse(value, p, end);
      if (v < 0) {
        return MALFORMED;
      }
      switch (i) {
        case 0 -> s0 = v;
        case 1 -> s1 = v;
        case 2 -> s2 = v;
        default -> w = v;
      }
      p = end + 1;
    }
    boolean sliding = algIndex == 1;
    if ((!sliding && (s0 == 0 || s2 != 0)) || w == 0) {
      return MALFORMED;
    }
    meta[0] = w;
    if (!IDS[algIndex].equals(alg.id())) {
      return FOREIGN;
    }
    st[0] = s0;
    st[1] = s1;
    st[2] = s2;
    return OK;
  }

  /** Unsigned decimal without leading zeros in {@code [from, to)}, at most 2^52; -1 when not. */
  private static long parse(String s, int from, int to) {
    int n = to - from;
    if (n < 1 || n > 16 || (n > 1 && s.charAt(from) == '0')) {
      return -1;
    }
    long v = 0;
    for (int i = from; i < to; i++) {
      char c = s.charAt(i);
      if (c < '0' || c > '9') {
        return -1;
      }
      v = v * 10 + (c - '0');
    }
    return v <= Checks.MAX_STATE_WORD ? v : -1;
  }
}
