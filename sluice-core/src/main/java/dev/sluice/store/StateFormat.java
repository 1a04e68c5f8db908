package dev.sluice.store;

import dev.sluice.Algorithm;
import dev.sluice.internal.AlgorithmKind;
import dev.sluice.internal.Checks;
import java.util.ArrayList;
import java.util.List;

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
 *   <li>{@code <algorithm>}: {@link Algorithm#id()} of the policy that wrote it, one of the algorithms
 *       with a fixed-size state ({@link AlgorithmKind#fixedSize()}): {@code fixed-window},
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
 * Then, optionally, the tickets applied to this budget and still alive (issue 26), each
 * {@code ;<ticket id>@<end of its life>}: 32 lowercase hexadecimal digits and a positive decimal, at
 * most {@link #MAX_SPENT} of them. A refund or settlement writes its ticket's id in the same
 * compare-and-set that applies it, so a retry finds it and changes nothing.
 * <pre>
 *   s1|fixed-window|1767225600000000|3|0|1767225600250000;0f1e2d3c4b5a69788796a5b4c3d2e1f0@1767225602000000
 * </pre>
 * A key with an override ({@link dev.sluice.KeyOverrides}) carries it between the state and the
 * tickets, {@code !<algorithm as AlgorithmKind.text writes it>}; its state is then the override's
 * algorithm's, and may be all zeros (an override set on a key that has no count yet):
 * <pre>
 *   s1|token-bucket|0|0|0|1767225600250000!token-bucket:5:1:1000000
 * </pre>
 * A record with an override keeps fewer spent tickets ({@link #room}), and never expires.
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

  private static final int SPENT_ENTRY = 1 + 32 + 1 + 16;
  /** Longest override section: "!sliding-window" and three 16-digit values with their colons. */
  static final int OVERRIDE_LENGTH = 15 + 3 * 17;
  /**
   * Most live spent tickets one record keeps, as many as fit a value of
   * {@link dev.sluice.spi.VersionedStore#MAX_VALUE_LENGTH} after the longest state (3): past it the
   * one whose life ends first is dropped. So a retry after an unknown outcome applies once as long
   * as fewer than 3 other tickets were applied to the key in between; a backend with a spent store
   * of its own (Redis, PostgreSQL) has no such bound.
   */
  static final int MAX_SPENT = (dev.sluice.spi.VersionedStore.MAX_VALUE_LENGTH - MAX_LENGTH) / SPENT_ENTRY;

  private StateFormat() {}

  static String encode(Algorithm alg, long[] st, long writtenAt) {
    return encode(alg, st, writtenAt, "");
  }

  /** The record's value with {@code spent} ({@link #spentTail} form, possibly empty) after the state. */
  static String encode(Algorithm alg, long[] st, long writtenAt, String spent) {
    return encode(alg, st, writtenAt, null, spent);
  }

  /**
   * The record's value with the key's {@code override} (null: none) and {@code spent} after the state.
   */
  static String encode(Algorithm alg, long[] st, long writtenAt, Algorithm override, String spent) {
    StringBuilder b = new StringBuilder(96 + spent.length()).append(VERSION_TAG).append('|').append(alg.id())
        .append('|').append(st[0]).append('|').append(st[1]).append('|').append(st[2])
        .append('|').append(writtenAt);
    if (override != null) {
      b.append('!').append(AlgorithmKind.text(override));
    }
    return b.append(spent).toString();
  }

  /**
   * The override a value carries, null when none; an {@link IllegalArgumentException} when its section
   * is not one Sluice wrote (the caller reports the record corrupt).
   */
  static Algorithm override(String value) {
    int bang = value == null ? -1 : value.indexOf('!');
    if (bang < 0) {
      return null;
    }
    int semi = value.indexOf(';', bang);
    return AlgorithmKind.fromText(value.substring(bang + 1, semi < 0 ? value.length() : semi));
  }

  /**
   * How many spent tickets a record whose value before them is {@code head} characters long can keep:
   * {@link #MAX_SPENT}, fewer behind an override, within {@link dev.sluice.spi.VersionedStore#MAX_VALUE_LENGTH}.
   */
  static int room(int head) {
    return Math.max(1, Math.min(MAX_SPENT, (dev.sluice.spi.VersionedStore.MAX_VALUE_LENGTH - head) / SPENT_ENTRY));
  }

  /** The spent tickets of a well-formed value: from its first {@code ';'} on, or empty. */
  static String spentTail(String value) {
    int semi = value == null ? -1 : value.indexOf(';');
    return semi < 0 ? "" : value.substring(semi);
  }

  /** Whether {@code tail} records ticket {@code id} alive at {@code now}. */
  static boolean spent(String tail, String id, long now) {
    int at = tail.indexOf(";" + id + "@");
    if (at < 0) {
      return false;
    }
    int end = tail.indexOf(';', at + 1);
    return parse(tail, at + 34, end < 0 ? tail.length() : end) > now;
  }

  /**
   * {@code tail} without the tickets dead at {@code now}, plus {@code id} alive until {@code ends};
   * when {@link #MAX_SPENT} live tickets are kept already, the one whose life ends first makes room.
   */
  static String spend(String tail, String id, long ends, long now) {
    return spend(tail, id, ends, now, MAX_SPENT);
  }

  /** {@link #spend} keeping at most {@code keep} tickets ({@link #room}). */
  static String spend(String tail, String id, long ends, long now, int keep) {
    List<String> live = new ArrayList<>(MAX_SPENT + 1);
    int earliest = -1;
    long earliestEnd = Long.MAX_VALUE;
    for (int p = 0; p < tail.length(); ) {
      int end = tail.indexOf(';', p + 1);
      end = end < 0 ? tail.length() : end;
      long e = parse(tail, p + 34, end);
      if (e > now) {
        if (e < earliestEnd) {
          earliestEnd = e;
          earliest = live.size();
        }
        live.add(tail.substring(p, end));
      }
      p = end;
    }
    while (live.size() >= keep) {
      live.remove(earliest);
      earliest = 0;
      earliestEnd = Long.MAX_VALUE;
      for (int i = 0; i < live.size(); i++) {
        String entry = live.get(i);
        long e = parse(entry, 34, entry.length());
        if (e < earliestEnd) {
          earliestEnd = e;
          earliest = i;
        }
      }
    }
    StringBuilder b = new StringBuilder(tail.length() + SPENT_ENTRY);
    live.forEach(b::append);
    return b.append(';').append(id).append('@').append(ends).toString();
  }

  /** The latest end of life among {@code tail}'s tickets; 0 when none. */
  static long latestEnd(String tail) {
    long latest = 0;
    for (int p = 0; p < tail.length(); ) {
      int end = tail.indexOf(';', p + 1);
      end = end < 0 ? tail.length() : end;
      latest = Math.max(latest, parse(tail, p + 34, end));
      p = end;
    }
    return latest;
  }

  /** Whether {@code tail} is empty or well-formed spent tickets, at most {@link #MAX_SPENT}. */
  private static boolean wellFormedTail(String tail) {
    int n = 0;
    for (int p = 0; p < tail.length(); n++) {
      if (n >= MAX_SPENT || tail.charAt(p) != ';' || tail.length() < p + 35 || tail.charAt(p + 33) != '@') {
        return false;
      }
      for (int i = p + 1; i < p + 33; i++) {
        char c = tail.charAt(i);
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
          return false;
        }
      }
      int end = tail.indexOf(';', p + 1);
      end = end < 0 ? tail.length() : end;
      if (parse(tail, p + 34, end) <= 0) {
        return false;
      }
      p = end;
    }
    return true;
  }

  /**
   * Parses {@code value} into {@code st} (3 longs) and returns {@link #OK}, {@link #FOREIGN} or
   * {@link #MALFORMED}; on {@code OK} and {@code FOREIGN}, {@code meta[0]} is the record's writtenAt.
   * {@code st} is meaningful only on {@code OK}.
   */
  static int decode(Algorithm alg, String value, long[] st, long[] meta) {
    int semi = value == null ? -1 : value.indexOf(';');
    if (semi >= 0) {
      if (value.length() - semi > MAX_SPENT * SPENT_ENTRY || !wellFormedTail(value.substring(semi))) {
        return MALFORMED;
      }
      value = value.substring(0, semi);
    }
    boolean overridden = false;
    int bang = value == null ? -1 : value.indexOf('!');
    if (bang >= 0) {
      if (value.length() - bang > OVERRIDE_LENGTH) {
        return MALFORMED;
      }
      try {
        if (!AlgorithmKind.of(AlgorithmKind.fromText(value.substring(bang + 1))).fixedSize()) {
          return MALFORMED;
        }
      } catch (IllegalArgumentException notOurs) {
        return MALFORMED;
      }
      overridden = true;
      value = value.substring(0, bang);
    }
    if (value == null || value.length() > MAX_LENGTH || !value.startsWith("s1|")) {
      return MALFORMED;
    }
    int p = 3;
    int bar = value.indexOf('|', p);
    if (bar < 0) {
      return MALFORMED;
    }
    AlgorithmKind kind = AlgorithmKind.find(value, p, bar);
    if (kind == null || !kind.fixedSize()) {
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
    boolean sliding = kind == AlgorithmKind.SLIDING_WINDOW;
    boolean absent = overridden && s0 == 0 && s1 == 0 && s2 == 0; // an override on a key with no count yet
    if ((!sliding && !absent && (s0 == 0 || s2 != 0)) || w == 0) {
      return MALFORMED;
    }
    meta[0] = w;
    if (kind != AlgorithmKind.of(alg)) {
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
