package dev.sluice.hazelcast;

import java.io.Serializable;
import java.util.Arrays;

/**
 * What one entry of the map holds: the reference model's state of one budget ({@code long[3]},
 * {@code dev.sluice.model.ReferenceModel}'s layout), the algorithm that wrote it, and the tickets
 * applied to the budget that are still alive (issue 26), written in the same entry processor that
 * applied them and expiring with the entry. Immutable; serialized with Java serialization (the
 * classes must be on every member's class path, see {@code docs/hazelcast.md}).
 */
final class Budget implements Serializable {
  private static final long serialVersionUID = 1L;
  /** The spent tickets: (id high 64 bits, id low 64 bits, end of life in epoch us) per ticket. */
  private static final int SPENT_WORDS = 3;

  /** {@link Wire#kind} of the algorithm that wrote {@link #state}. */
  final int kind;
  final long s0;
  final long s1;
  final long s2;
  /** Spent tickets, {@value #SPENT_WORDS} words each; never null. */
  final long[] spent;
  /**
   * The budget's override ({@code dev.sluice.KeyOverrides}): {@link Wire#kind} and the three numbers
   * of the algorithm that decides it, whatever the caller passes; null when it has none (and in an
   * entry written before overrides existed, which Java serialization reads without the field).
   */
  final long[] override;

  Budget(int kind, long[] st, long[] spent) {
    this(kind, st, spent, null);
  }

  Budget(int kind, long[] st, long[] spent, long[] override) {
    this.kind = kind;
    this.s0 = st[0];
    this.s1 = st[1];
    this.s2 = st[2];
    this.spent = spent;
    this.override = override;
  }

  /** Copies the state into {@code st} when it is of {@code kind}; another algorithm's state counts as absent. */
  void load(int kind, long[] st) {
    boolean mine = this.kind == kind;
    st[0] = mine ? s0 : 0;
    st[1] = mine ? s1 : 0;
    st[2] = mine ? s2 : 0;
  }

  /** Whether ticket ({@code hi}, {@code lo}) was applied to this budget and is alive at {@code now}. */
  static boolean spent(long[] spent, long hi, long lo, long now) {
    for (int i = 0; i < spent.length; i += SPENT_WORDS) {
      if (spent[i] == hi && spent[i + 1] == lo && spent[i + 2] > now) {
        return true;
      }
    }
    return false;
  }

  /** {@code spent} without the tickets dead at {@code now}, plus ({@code hi}, {@code lo}) alive until {@code end}. */
  static long[] spend(long[] spent, long hi, long lo, long end, long now) {
    long[] live = live(spent, now);
    long[] out = Arrays.copyOf(live, live.length + SPENT_WORDS);
    out[live.length] = hi;
    out[live.length + 1] = lo;
    out[live.length + 2] = end;
    return out;
  }

  /** {@code spent} without the tickets dead at {@code now}. */
  static long[] live(long[] spent, long now) {
    int n = 0;
    long[] out = new long[spent.length];
    for (int i = 0; i < spent.length; i += SPENT_WORDS) {
      if (spent[i + 2] > now) {
        System.arraycopy(spent, i, out, n, SPENT_WORDS);
        n += SPENT_WORDS;
      }
    }
    return n == spent.length ? spent : Arrays.copyOf(out, n);
  }

  /** The latest end of life among the spent tickets; 0 when none. */
  static long latestEnd(long[] spent) {
    long latest = 0;
    for (int i = 2; i < spent.length; i += SPENT_WORDS) {
      latest = Math.max(latest, spent[i]);
    }
    return latest;
  }

  /** Tickets kept (tests). */
  int spentCount() {
    return spent.length / SPENT_WORDS;
  }

  @Override public String toString() {
    return "Budget[kind=" + kind + ", state=" + s0 + "/" + s1 + "/" + s2 + ", spent=" + spentCount() + "]";
  }
}
