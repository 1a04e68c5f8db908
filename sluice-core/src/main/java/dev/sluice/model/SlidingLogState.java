package dev.sluice.model;

import dev.sluice.Algorithm.SlidingLog;

/**
 * State and reference steps of the exact sliding log: a ring of (time, permits) entries, oldest first,
 * at most {@code limit} of them (each entry holds at least one permit; entries at the same microsecond
 * are merged; a settlement's overrun adds to its entry, or logs one at now once the entry is gone).
 * Entries older than one window are dropped as they are passed; dropping them changes no decision,
 * so a refused acquire still "writes nothing" that any later decision could observe.
 *
 * <pre>
 *   live entries = those with now - time &lt; W;  total = their permits
 *   allow iff total + n &lt;= L; appends (max(now, newest), n)
 *   remaining = L - total(after); resetAt = oldest live time + W (when capacity next returns)
 *   retryAfter: the oldest entries whose expiry frees total + n - L permits; the last of them, + W - now
 *   stamp = the entry's time
 * </pre>
 * Not thread-safe: the caller locks.
 */
public final class SlidingLogState {
  private long[] times = new long[4];
  private long[] permits = new long[4];
  private int head;
  private int size;
  private long total;

  /** True when no live entry remains (the state may be reclaimed). */
  public boolean isEmpty() {
    return size == 0;
  }

  /** Time after which this log can no longer matter (newest entry + window), or 0 when empty. */
  public long expiresAt(SlidingLog sl) {
    return size == 0 ? 0 : times[idx(size - 1)] + sl.windowMicros();
  }

  public void acquire(SlidingLog sl, long now, long n, Outcome out) {
    step(sl, now, n, out, true);
  }

  public void peek(SlidingLog sl, long now, Outcome out) {
    step(sl, now, 1, out, false);
  }

  public void refund(SlidingLog sl, long now, long n, long stamp, Outcome out) {
    settle(sl, now, -n, stamp, out);
  }

  /**
   * Settles the entry of {@code stamp} at its actual cost ({@link ReferenceModel#settle}):
   * {@code delta < 0} takes that much out of the entry while it is live; {@code delta > 0} adds it to
   * the entry while it is live, otherwise logs it at {@code now} (after the newest entry, merged with
   * it at the same instant), never past twice the limit logged in the window.
   */
  public void settle(SlidingLog sl, long now, long delta, long stamp, Outcome out) {
    if (unusable(now, out)) {
      return;
    }
    prune(sl, now);
    boolean wrote = false;
    int at = -1;
    for (int i = 0; i < size && at < 0; i++) {
      if (times[idx(i)] == stamp) {
        at = idx(i);
      }
    }
    if (delta < 0 && at >= 0) {
      long give = Math.min(-delta, permits[at]);
      permits[at] -= give;
      total -= give;
      wrote = give > 0;
    } else if (delta > 0) {
      long add = ReferenceModel.charge(total, delta, ReferenceModel.debtCeiling(sl.limit(), 1)) - total;
      wrote = add > 0;
      if (wrote && at >= 0) {
        permits[at] += add;
      } else if (wrote) {
        long t = size == 0 ? now : Math.max(now, times[idx(size - 1)]);
        if (size > 0 && times[idx(size - 1)] == t) {
          permits[idx(size - 1)] += add;
        } else {
          push(t, add);
        }
      }
      total += add;
    }
    step(sl, now, 1, out, false);
    out.wrote = wrote;
  }

  /** Forgets every entry. */
  public void clear() {
    head = 0;
    size = 0;
    total = 0;
  }

  /**
   * Invalid clock, or a newest entry further ahead of {@code now} than the clock tolerance
   * ({@link dev.sluice.model.ReferenceModel#tooFarAhead}): no step runs.
   */
  private boolean unusable(long now, Outcome out) {
    if (!dev.sluice.internal.Checks.validClock(now)) {
      out.invalid();
      return true;
    }
    if (size > 0 && times[idx(size - 1)] - now > dev.sluice.internal.Checks.CLOCK_TOLERANCE_MICROS) {
      out.corrupted();
      return true;
    }
    return false;
  }

  private void step(SlidingLog sl, long now, long n, Outcome out, boolean charge) {
    if (unusable(now, out)) {
      return;
    }
    prune(sl, now);
    long w = sl.windowMicros();
    long limit = sl.limit();
    if (total + n <= limit) {
      if (!charge) {
        out.set(true, limit - total, size == 0 ? now + w : times[head] + w, 0, 0, false);
        return;
      }
      long t = size == 0 ? now : Math.max(now, times[idx(size - 1)]);
      if (size > 0 && times[idx(size - 1)] == t) {
        permits[idx(size - 1)] += n;
      } else {
        push(t, n);
      }
      total += n;
      out.set(true, limit - total, times[head] + w, 0, t, true);
      return;
    }
    long needFreed = total + n - limit;
    long freed = 0;
    long at = now;
    for (int i = 0; i < size; i++) {
      int j = idx(i);
      freed += permits[j];
      if (freed >= needFreed) {
        at = times[j] + w;
        break;
      }
    }
    out.set(false, limit - total, times[head] + w, at - now, 0, false);
  }

  private void prune(SlidingLog sl, long now) {
    long w = sl.windowMicros();
    while (size > 0 && now - times[head] >= w) {
      total -= permits[head];
      head = (head + 1) % times.length;
      size--;
    }
    if (size == 0) {
      head = 0;
    }
  }

  private void push(long t, long n) {
    if (size == times.length) {
      long[] nt = new long[times.length * 2];
      long[] np = new long[times.length * 2];
      for (int i = 0; i < size; i++) {
        nt[i] = times[idx(i)];
        np[i] = permits[idx(i)];
      }
      times = nt;
      permits = np;
      head = 0;
    }
    int j = idx(size);
    times[j] = t;
    permits[j] = n;
    size++;
  }

  private int idx(int i) {
    return (head + i) % times.length;
  }
}
