package dev.sluice.internal;

import dev.sluice.Algorithm;
import dev.sluice.model.ReferenceModel;
import java.util.ArrayDeque;
import java.util.Iterator;

/**
 * Refuses the readings of a supplied clock that lag far enough behind the clock's own earlier
 * readings that a state written by this limiter may have expired while the clock still counts it,
 * for a store that expires state on a clock of its own: Redis's TTL runs on the server's clock, at
 * the rate of {@link System#nanoTime()}, whatever the supplied clock does.
 *
 * <p><b>The hazard.</b> A write at supplied reading {@code t_w}, taken at monotonic instant
 * {@code n_w} (just before the store call), whose state matters until {@code E_w}
 * ({@link ReferenceModel#expiresAt}, supplied time), is stored with a TTL of at least
 * {@code E_w - t_w + grace + timeout}, so it is gone no earlier than {@code n_w + E_w - t_w + grace +
 * timeout} on the monotonic clock. A later step at reading {@code t}, taken at {@code n}, runs on the
 * store before {@code n + timeout} (a reply later than that is no answer), and counts the state while
 * {@code t < E_w}. It can find the state gone only if {@code n + timeout >= n_w + E_w - t_w + grace +
 * timeout}, that is, with {@code t < E_w}, only if {@code (t_w - n_w) - (t - n) > grace}: the clock's
 * offset from the monotonic clock (reading minus monotonic instant) fell by more than the grace
 * between the write and the step. A state forgotten that way admits more than the limit.
 *
 * <p><b>The rule.</b> The writes are summarised per era: their highest offset, the latest instant one
 * of their states can matter (each write's reading plus {@link ReferenceModel#lifetime}), their
 * earliest reading and their longest lifetime. A step is refused when, against some era, its offset
 * lags the highest by more than the grace while its reading is earlier than that latest instant:
 * every write {@code w} of the era has {@code t_w - n_w} at most the highest offset and {@code E_w} at
 * most the latest instant, so a step that could find one of its states gone is refused. An era is
 * dropped at the first step that finds every state written in it ended. A new era opens once the
 * current one is as old, in supplied time, as its longest lifetime: so a lag counts against the writes
 * of the last lifetimes only, and a clock that drifts by a second over hours is not refused for that,
 * while one that stops or steps back is refused until it catches up or every state it wrote before has
 * ended. At most {@value #MAX_ERAS} eras are kept; past that the two oldest are merged, which can only
 * refuse more.
 *
 * <p><b>Beyond the clock tolerance.</b> A step more than {@link Checks#CLOCK_TOLERANCE_MICROS} (plus the
 * era's longest lifetime) behind every write of an era is not held up by it: those states lie further
 * ahead of the reading than any clock within the tolerance writes, so every tier refuses them as
 * corrupt state while they are stored ({@link ReferenceModel#tooFarAhead}), and a reset clears them,
 * where a refusal by this rule would outlast the reset by the size of the step. A write at such a step
 * opens an era of its own, so that the two never mix. (And a step at a reading earlier than one that
 * already found an era's states ended is judged against what is kept: the memory tier, which reclaimed
 * such states at that later reading and never decides before it, forgets them too.)
 *
 * <p>Thread-safe; one short lock per store call.
 */
public final class ClockLag {
  /** The most eras kept. */
  static final int MAX_ERAS = 8;

  private final long graceMicros;
  /** Oldest first; the last is the current one. */
  private final ArrayDeque<Era> eras = new ArrayDeque<>();

  /** A lag of at most {@code graceMicros} (the store's extra TTL for skew) is admitted. */
  public ClockLag(long graceMicros) {
    this.graceMicros = graceMicros;
  }

  /**
   * Whether a step of {@code alg} may decide at supplied reading {@code now}, read at monotonic
   * instant {@code monotonicMicros} ({@link System#nanoTime()} in microseconds, taken just before the
   * store call). A step that may write ({@code writes}) and is admitted is counted in the current era.
   */
  public synchronized boolean admits(Algorithm alg, long now, long monotonicMicros, boolean writes) {
    long offset = now - monotonicMicros;
    for (Iterator<Era> it = eras.iterator(); it.hasNext(); ) {
      Era e = it.next();
      if (now >= e.horizon) {
        it.remove(); // every state written in it has ended
      } else if (e.fastest - offset > graceMicros && !e.farAhead(now)) {
        return false;
      }
    }
    if (writes) {
      Era cur = eras.peekLast();
      if (cur == null || now - cur.start >= cur.span || cur.farAhead(now)) {
        if (eras.size() == MAX_ERAS) {
          eras.addFirst(eras.pollFirst().merge(eras.pollFirst()));
        }
        cur = new Era(now);
        eras.addLast(cur);
      }
      cur.add(now, offset, ReferenceModel.lifetime(alg));
    }
    return true;
  }

  /** Eras kept (tests). */
  synchronized int eras() {
    return eras.size();
  }

  /** The writes of one stretch of supplied time. */
  private static final class Era {
    final long start;
    long span;
    long earliest = Long.MAX_VALUE;
    long fastest = Long.MIN_VALUE;
    long horizon = Long.MIN_VALUE;

    Era(long start) {
      this.start = start;
    }

    void add(long now, long offset, long lifetime) {
      span = Math.max(span, lifetime);
      earliest = Math.min(earliest, now);
      fastest = Math.max(fastest, offset);
      horizon = Math.max(horizon, now + lifetime);
    }

    /** Whether {@code now} lies behind every write of this era by more than the clock tolerance allows. */
    boolean farAhead(long now) {
      return earliest - now > Checks.CLOCK_TOLERANCE_MICROS + span;
    }

    Era merge(Era newer) {
      Era m = new Era(Math.min(start, newer.start));
      m.span = Math.max(span, newer.span);
      m.earliest = Math.min(earliest, newer.earliest);
      m.fastest = Math.max(fastest, newer.fastest);
      m.horizon = Math.max(horizon, newer.horizon);
      return m;
    }
  }
}
