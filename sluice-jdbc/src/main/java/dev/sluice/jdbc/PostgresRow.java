package dev.sluice.jdbc;

import dev.sluice.Algorithm;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.internal.Checks;

/**
 * What a row of the limiter's table holds ({@code schema.sql}): the algorithm as a code and three
 * parameters {@code p1..p3}, whether they are pinned by an override, and the reference model's state
 * {@code s0..s2}; and the one rule of a row Sluice wrote, {@link #wellFormed(String)}.
 */
final class PostgresRow {
  static final int ALG_FIXED = 1, ALG_SLIDING = 2, ALG_BUCKET = 3, ALG_GCRA = 4;
  /**
   * A spent ticket's row (issue 26): key {@code <key id>:t:<ticket id>} beside its budget's, no state,
   * {@code expires_at} the end of the ticket's life. Never a budget: no decision reads it, the sweep
   * deletes it once expired.
   */
  static final int ALG_SPENT = 0;

  /** Whether row {@code r} is a spent ticket's ({@link #ALG_SPENT}), which the sweep deletes like an expired state. */
  static String spentRow(String r) {
    return "(" + r + ".alg = " + ALG_SPENT + " AND NOT " + r + ".pinned AND " + r + ".key_id LIKE '%:t:%')";
  }

  /**
   * The rule as SQL over a row {@code $r}, with the core's bounds substituted once: state words are
   * at most {@link Checks#MAX_STATE_WORD} (2^52, as in the versioned store's state format), windows
   * and periods {@link Checks#MIN_WINDOW_MICROS}..{@link Checks#MAX_WINDOW_MICROS}, and a pinned
   * configuration within every bound of the {@link Algorithm} records (counts and products at most
   * {@link Checks#MAX_EXACT}, a refill or a burst's drain under {@link Checks#MAX_AHEAD}). CASE
   * orders the checks so that no product or division is evaluated before its operands are bounded.
   */
  private static final String WELL_FORMED = """
      ($r.alg BETWEEN $FIXED AND $GCRA
       AND $r.s0 BETWEEN 0 AND $WORD AND $r.s1 BETWEEN 0 AND $WORD AND $r.s2 BETWEEN 0 AND $WORD
       AND ($r.s0 <> 0 OR $r.alg = $SLIDING OR ($r.s1 = 0 AND $r.s2 = 0))
       AND ($r.alg = $SLIDING OR $r.s2 = 0)
       AND (NOT $r.pinned OR CASE $r.alg
         WHEN $FIXED THEN $r.p1 BETWEEN 1 AND $MAX AND $r.p2 BETWEEN $MIN_WINDOW AND $MAX_WINDOW
         WHEN $SLIDING THEN CASE WHEN $r.p1 >= 1 AND $r.p2 BETWEEN $MIN_WINDOW AND $MAX_WINDOW
           THEN $r.p1 <= $MAX / $r.p2 ELSE false END
         WHEN $BUCKET THEN CASE WHEN $r.p1 >= 1 AND $r.p2 BETWEEN 1 AND $MAX AND $r.p3 BETWEEN $MIN_WINDOW AND $MAX_WINDOW
           THEN CASE WHEN $r.p1 <= $MAX / $r.p3 THEN $r.p1 * $r.p3 / $r.p2 < $AHEAD ELSE false END ELSE false END
         ELSE CASE WHEN $r.p1 >= 1 AND $r.p2 BETWEEN $MIN_WINDOW AND $MAX_WINDOW AND $r.p3 >= 1
           THEN CASE WHEN $r.p3 <= $MAX / $r.p2 THEN $r.p1 <= $MAX - $r.p3 * $r.p2 AND $r.p3 * $r.p2 / $r.p1 < $AHEAD
             ELSE false END ELSE false END
       END))"""
      .replace("$FIXED", Integer.toString(ALG_FIXED)).replace("$SLIDING", Integer.toString(ALG_SLIDING))
      .replace("$BUCKET", Integer.toString(ALG_BUCKET)).replace("$GCRA", Integer.toString(ALG_GCRA))
      .replace("$MIN_WINDOW", Long.toString(Checks.MIN_WINDOW_MICROS)).replace("$MAX_WINDOW", Long.toString(Checks.MAX_WINDOW_MICROS))
      .replace("$MAX", Long.toString(Checks.MAX_EXACT)).replace("$WORD", Long.toString(Checks.MAX_STATE_WORD))
      .replace("$AHEAD", Long.toString(Checks.MAX_AHEAD))
      .replace("\n", " ");

  private PostgresRow() {}

  /** The row's code of an algorithm; the exact sliding log has none (the backend's capabilities refuse it first). */
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
    throw new IllegalArgumentException("algorithm " + a.id());
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

  /**
   * {@code p} itself when a pinned row's configuration is its algorithm, else that configuration under
   * p's name. A configuration the core refuses is a corrupt row (the rule below keeps it from getting here).
   */
  static Policy pinnedPolicy(Policy p, int alg, long p1, long p2, long p3) {
    Algorithm a;
    try {
      a = algorithm(alg, p1, p2, p3);
    } catch (IllegalArgumentException e) {
      throw new StoreFailure(Reason.CORRUPT_STATE, e);
    }
    return a.equals(p.algorithm()) ? p : new Policy(p.name(), a);
  }

  /**
   * The one rule of a row Sluice wrote, as a SQL predicate over the row alias {@code r}: a known
   * algorithm; state words in [0, 2^52]; an absent state all zeros (the sliding window's start may be
   * 0 with counts, on a clock under one window); the third word used only by the sliding window; and a
   * pinned configuration that the core's {@link Algorithm} records accept. The
   * statements apply it to the row they lock and return its verdict on the row their snapshot saw
   * ({@code cur_ok}); the sweep reads it for each expired row. Java has no copy of it.
   */
  static String wellFormed(String r) {
    return WELL_FORMED.replace("$r.", r + ".");
  }
}
