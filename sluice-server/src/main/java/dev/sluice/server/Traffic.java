package dev.sluice.server;

import java.util.Arrays;
import java.util.Locale;

/**
 * A replayable traffic pattern: request times (microseconds from the start, ascending) and the key
 * each request is for. Deterministic: the same arguments give the same trace.
 */
final class Traffic {
  /** The patterns {@code sluice simulate} replays. */
  enum Pattern {
    /** One key, requests evenly spaced at 1.5 times the limit. */
    STEADY("steady: one key, requests evenly spaced at 1.5x the limit"),
    /** One key, light background traffic with a short burst of twice the limit every two windows. */
    BURSTY("bursty: one key, light traffic with a burst of 2x the limit every two windows"),
    /**
     * One key: a first request opens the fixed window, then a spike of 3x the limit straddles the end
     * of that window (half before, half after), then light traffic. The fixed window admits up to
     * twice its limit in the spike.
     */
    BOUNDARY("boundary: one key; a spike of 3x the limit straddles the window boundary"),
    /**
     * A spray of distinct keys (each sent once, like a scan from rotating addresses) alongside one
     * regular key. The memory tier tracks at most {@code max-keys} keys: the rest of the spray is
     * refused (key table full) without evicting anybody.
     */
    SPRAY("spray: many distinct keys sent once each, plus one regular key"),
    /**
     * One tenant's LLM calls: each reserves an estimate (its max_tokens, a twentieth of the limit)
     * and costs a random actual, mostly a tenth to a half of it, one call in ten up to 1.5 times
     * it; about 1.5x the limit in actual tokens is offered. Replayed reserving only and settling.
     */
    LLM("llm: one tenant's calls, each reserving max_tokens and using a random actual (~40% of it on average)");

    final String description;

    Pattern(String description) {
      this.description = description;
    }

    String id() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  final Pattern pattern;
  final long[] times;
  final int[] keys;
  final String[] keyNames;
  final long durationMicros;
  /** LLM: the permits each request reserves; 1 otherwise. */
  final long estimate;
  /** LLM: each request's actual cost; null otherwise (a request costs its one permit). */
  final long[] costs;

  private Traffic(Pattern pattern, long[] times, int[] keys, String[] keyNames, long durationMicros) {
    this(pattern, times, keys, keyNames, durationMicros, 1, null);
  }

  private Traffic(Pattern pattern, long[] times, int[] keys, String[] keyNames, long durationMicros, long estimate, long[] costs) {
    this.pattern = pattern;
    this.times = times;
    this.keys = keys;
    this.keyNames = keyNames;
    this.durationMicros = durationMicros;
    this.estimate = estimate;
    this.costs = costs;
  }

  /** The cost of request {@code i}: its actual under LLM, else 1. */
  long cost(int i) {
    return costs == null ? 1 : costs[i];
  }

  int size() {
    return times.length;
  }

  /** Builds {@code pattern} for a limit of {@code limit} per {@code windowMicros}; {@code sprayKeys} only for SPRAY. */
  static Traffic of(Pattern pattern, long limit, long windowMicros, long durationMicros, int sprayKeys) {
    Builder b = new Builder();
    long w = windowMicros;
    switch (pattern) {
      case STEADY -> b.even(0, 0, durationMicros, 3 * limit * durationMicros / (2 * w));
      case BURSTY -> {
        b.even(0, 0, durationMicros, limit * durationMicros / (4 * w));
        for (long t = w / 2; t < durationMicros; t += 2 * w) {
          b.even(0, t, Math.min(durationMicros, t + w / 10), 2 * limit);
        }
      }
      case BOUNDARY -> {
        b.add(0, 0);
        b.even(0, w - w / 10, w + w / 10, 3 * limit);
        b.even(0, w + w / 5, durationMicros, limit * (durationMicros - w - w / 5) / (2 * w));
      }
      case SPRAY -> {
        b.even(0, 0, durationMicros, limit * durationMicros / (2 * w));
        long sprayEnd = Math.max(1, durationMicros * 2 / 3);
        for (int i = 0; i < sprayKeys; i++) {
          b.add(1 + i, sprayEnd * i / sprayKeys);
        }
      }
      case LLM -> {
        return llm(limit, w, durationMicros);
      }
      default -> throw new IllegalStateException();
    }
    String[] names;
    if (pattern == Pattern.SPRAY) {
      names = new String[sprayKeys + 1];
      names[0] = "user:regular";
      for (int i = 1; i <= sprayKeys; i++) {
        names[i] = "ip:10." + ((i >> 16) & 255) + "." + ((i >> 8) & 255) + "." + (i & 255);
      }
    } else {
      names = new String[] {"user:42"};
    }
    return b.build(pattern, names, durationMicros);
  }

  private static Traffic llm(long limit, long w, long durationMicros) {
    long estimate = Math.max(1, limit / 20);
    java.util.SplittableRandom rnd = new java.util.SplittableRandom(19);
    long calls = Math.max(1, 3 * limit * durationMicros / (2 * w) * 10 / Math.max(1, 4 * estimate));
    long[] times = new long[(int) Math.min(calls, 50_000_001)];
    long[] costs = new long[times.length];
    for (int i = 0; i < times.length; i++) {
      times[i] = durationMicros * i / times.length;
      costs[i] = rnd.nextInt(10) == 0
          ? Math.min(limit, estimate + rnd.nextLong(estimate / 2 + 1))
          : Math.max(0, estimate / 10 + rnd.nextLong(estimate * 2 / 5 + 1));
    }
    return new Traffic(Pattern.LLM, times, new int[times.length], new String[] {"tenant:acme"}, durationMicros, estimate, costs);
  }

  private static final class Builder {
    private long[] packedTimes = new long[1024];
    private int[] packedKeys = new int[1024];
    private int n;

    void add(int key, long t) {
      if (n == packedTimes.length) {
        packedTimes = Arrays.copyOf(packedTimes, n * 2);
        packedKeys = Arrays.copyOf(packedKeys, n * 2);
      }
      packedTimes[n] = t;
      packedKeys[n] = key;
      n++;
    }

    /** {@code count} requests for {@code key} evenly spaced over [from, to). */
    void even(int key, long from, long to, long count) {
      for (long i = 0; i < count; i++) {
        add(key, from + (to - from) * i / count);
      }
    }

    Traffic build(Pattern pattern, String[] names, long duration) {
      // Stable sort by time (a request's order within one microsecond follows insertion).
      Integer[] order = new Integer[n];
      for (int i = 0; i < n; i++) {
        order[i] = i;
      }
      long[] t = packedTimes;
      Arrays.sort(order, (a, c) -> Long.compare(t[a], t[c]));
      long[] times = new long[n];
      int[] keys = new int[n];
      for (int i = 0; i < n; i++) {
        times[i] = packedTimes[order[i]];
        keys[i] = packedKeys[order[i]];
      }
      return new Traffic(pattern, times, keys, names, duration);
    }
  }
}
