package dev.sluice.jdbc;

import dev.sluice.Algorithm;
import dev.sluice.Policy;

/**
 * What a row of the limiter's table holds ({@code schema.sql}): the algorithm as a code and three
 * parameters {@code p1..p3}, whether they are pinned by an override, and the reference model's state
 * {@code s0..s2}; and the rule of a row Sluice wrote.
 */
final class PostgresRow {
  static final int ALG_FIXED = 1, ALG_SLIDING = 2, ALG_BUCKET = 3, ALG_GCRA = 4;

  /** Largest state value a well-formed row holds (2^53); anything above is treated as corrupt. */
  static final long MAX_STATE = 1L << 53;

  private PostgresRow() {}

  /** The row's code of an algorithm; the exact sliding log has none. */
  static int code(Algorithm a) {
    if (a instanceof Algorithm.FixedWindow) {
      return ALG_FIXED;
    } else if (a instanceof Algorithm.SlidingWindow) {
      return ALG_SLIDING;
    } else if (a instanceof Algorithm.TokenBucket) {
      return ALG_BUCKET;
    } else if (a instanceof Algorithm.Gcra) {
      return ALG_GCRA;
    }
    throw new IllegalArgumentException("algorithm " + a.id() + " is not supported by the PostgreSQL backend: the exact "
        + "sliding log keeps one entry per admitted permit and does not fit a row; use Policy.slidingWindow "
        + "(the two-window weighted counter) or the memory tier");
  }

  /** The row's p1..p3 of an algorithm (see schema.sql). */
  static long param(Algorithm a, int i) {
    if (a instanceof Algorithm.FixedWindow fw) {
      return i == 1 ? fw.limit() : i == 2 ? fw.windowMicros() : 0;
    } else if (a instanceof Algorithm.SlidingWindow sw) {
      return i == 1 ? sw.limit() : i == 2 ? sw.windowMicros() : 0;
    } else if (a instanceof Algorithm.TokenBucket tb) {
      return i == 1 ? tb.capacity() : i == 2 ? tb.refillTokens() : tb.refillPeriodMicros();
    } else if (a instanceof Algorithm.Gcra g) {
      return i == 1 ? g.rate() : i == 2 ? g.periodMicros() : g.burst();
    }
    throw new IllegalArgumentException("algorithm " + a.id());
  }

  /** The algorithm a row's p1..p3 describe; {@link IllegalArgumentException} when they are invalid. */
  static Algorithm algorithm(int alg, long p1, long p2, long p3) {
    return switch (alg) {
      case ALG_FIXED -> new Algorithm.FixedWindow(p1, p2);
      case ALG_SLIDING -> new Algorithm.SlidingWindow(p1, p2);
      case ALG_BUCKET -> new Algorithm.TokenBucket(p1, p2, p3);
      case ALG_GCRA -> new Algorithm.Gcra(p1, p2, p3);
      default -> throw new IllegalArgumentException("algorithm code " + alg);
    };
  }

  /** {@code p} itself when a pinned row's configuration is its algorithm, else that configuration under p's name. */
  static Policy pinnedPolicy(Policy p, int alg, long p1, long p2, long p3) {
    Algorithm a = algorithm(alg, p1, p2, p3);
    return a.equals(p.algorithm()) ? p : new Policy(p.name(), a);
  }

  /**
   * The row predicate "this is a state Sluice wrote": known algorithm, state values in [0, 2^53], an
   * absent state all zeros, unused slots zero, and a pinned configuration that the core's
   * {@link dev.sluice.Algorithm} records would accept. {@link #wellFormed(int, boolean, long, long, long,
   * long, long, long)} is the same predicate in Java.
   */
  static String wellFormed(String r) {
    String max = Long.toString(MAX_STATE);
    String maxExact = Long.toString(1L << 52);
    return "(" + r + ".alg BETWEEN 1 AND 4"
        + " AND " + r + ".s0 BETWEEN 0 AND " + max + " AND " + r + ".s1 BETWEEN 0 AND " + max
        + " AND " + r + ".s2 BETWEEN 0 AND " + max
        + " AND (" + r + ".s0 <> 0 OR (" + r + ".s1 = 0 AND " + r + ".s2 = 0))"
        + " AND (" + r + ".alg = " + ALG_SLIDING + " OR " + r + ".s2 = 0)"
        + " AND (NOT " + r + ".pinned OR CASE " + r + ".alg"
        + " WHEN 1 THEN " + r + ".p1 >= 1 AND " + r + ".p2 BETWEEN 1000 AND " + maxExact
        + " WHEN 2 THEN " + r + ".p1 >= 1 AND " + r + ".p2 BETWEEN 1000 AND " + maxExact + " AND " + r + ".p1 <= " + maxExact + " / " + r + ".p2"
        + " WHEN 3 THEN " + r + ".p1 >= 1 AND " + r + ".p2 >= 1 AND " + r + ".p3 BETWEEN 1000 AND " + maxExact + " AND " + r + ".p1 <= " + maxExact + " / " + r + ".p3"
        + " ELSE " + r + ".p1 >= 1 AND " + r + ".p2 BETWEEN 1000 AND " + maxExact + " AND " + r + ".p3 >= 1 AND " + r + ".p3 <= " + maxExact + " / " + r + ".p2"
        + " END))";
  }

  /** The same predicate as {@link #wellFormed(String)}, over a row read by a statement. */
  static boolean wellFormed(int alg, boolean pinned, long p1, long p2, long p3, long s0, long s1, long s2) {
    long max = MAX_STATE;
    if (alg < 1 || alg > 4 || s0 < 0 || s1 < 0 || s2 < 0 || s0 > max || s1 > max || s2 > max) {
      return false;
    }
    if (s0 == 0 && (s1 != 0 || s2 != 0)) {
      return false;
    }
    if (alg != ALG_SLIDING && s2 != 0) {
      return false;
    }
    if (pinned) {
      try {
        algorithm(alg, p1, p2, p3);
      } catch (IllegalArgumentException e) {
        return false;
      }
    }
    return true;
  }
}
