package dev.sluice.model;

import dev.sluice.Algorithm;
import dev.sluice.Algorithm.FixedWindow;
import dev.sluice.Algorithm.Gcra;
import dev.sluice.Algorithm.SlidingLog;
import dev.sluice.Algorithm.SlidingWindow;
import dev.sluice.Algorithm.TokenBucket;
import dev.sluice.internal.AlgorithmKind;
import dev.sluice.internal.Checks;

/**
 * The reference step functions: the one definition of every algorithm, which every backend (memory,
 * Redis scripts, SQL statements, the compare-and-set engine) must match decision for decision.
 *
 * <p>Each function is pure over its arguments: {@code (state, now, permits, algorithm) -> (state',
 * outcome)}. Time is integer epoch microseconds; all arithmetic is on {@code long} and, by the
 * validation in {@link Algorithm} and the clock range 1..{@link Checks#MAX_CLOCK}, never exceeds
 * 2^53, so the same code ports to Lua (doubles) and SQL (bigint) unchanged; a clock far behind a GCRA
 * state is decided without forming its debt (see {@code gcra}). A step never allocates.
 *
 * <h2>State layout</h2>
 * A state is a {@code long[3]}; all zeros means "no state" (a key never seen, or reclaimed). A clock
 * reading outside 1..{@link Checks#MAX_CLOCK} is invalid ({@link Outcome#invalidClock()}), which keeps
 * 0 free to mean absent. The sliding window's start is a multiple of its window, so on a clock under one
 * window it is 0 while its counts are not: for it, only all three words zero is absent.
 *
 * <h2>States from the future</h2>
 * A state further ahead of the clock than its policy could have written it at any reading within
 * {@link Checks#CLOCK_TOLERANCE_MICROS} ({@link #tooFarAhead}) is not one Sluice wrote: every step
 * refuses it as {@link Outcome#corrupt()} and writes nothing.
 * <table>
 *   <caption>state[0..2] per algorithm</caption>
 *   <tr><th>algorithm</th><th>[0]</th><th>[1]</th><th>[2]</th></tr>
 *   <tr><td>fixed window</td><td>window start</td><td>count</td><td>-</td></tr>
 *   <tr><td>sliding window</td><td>current window start (a multiple of the window)</td><td>current count</td><td>previous count</td></tr>
 *   <tr><td>token bucket</td><td>time of last update</td><td>tokens x refill period (scaled tokens)</td><td>-</td></tr>
 *   <tr><td>GCRA</td><td>theoretical arrival time, whole microseconds</td><td>its fraction, in 1/rate microseconds</td><td>-</td></tr>
 * </table>
 * The sliding log keeps a list and has its own state type, {@link SlidingLogState}.
 *
 * <h2>Saturation</h2>
 * A refused acquire never changes the state ({@link Outcome#wrote()} is false): a flood against a
 * key at its limit costs reads, not writes. Only allowed acquires and refunds and settlements that
 * applied write.
 */
public final class ReferenceModel {
  private ReferenceModel() {}

  /** Number of longs in a state array that fits every algorithm. */
  public static final int STATE_SIZE = 3;

  /**
   * The words of a state array that {@code alg} reads and writes: 3 for the sliding window, 2 for the
   * others (which never touch {@code state[2]}, so a caller may use it for its own purposes), and 0
   * for the sliding log, which keeps a {@link SlidingLogState} instead.
   */
  public static int stateWords(Algorithm alg) {
    if (alg instanceof SlidingWindow) {
      return 3;
    }
    return alg instanceof SlidingLog ? 0 : 2;
  }

  /** Tries to spend {@code permits} (already validated: 1..limit) at {@code now}. */
  public static void acquire(Algorithm alg, long[] st, long now, long permits, Outcome out) {
    if (unusable(alg, st, now, out)) {
      return;
    }
    step(alg, st, now, permits, out, true);
  }

  /** What an acquire of one permit would decide at {@code now}, without changing the state. */
  public static void peek(Algorithm alg, long[] st, long now, Outcome out) {
    if (unusable(alg, st, now, out)) {
      return;
    }
    step(alg, st, now, 1, out, false);
  }

  /**
   * The outcome of an acquire that a store applied itself at {@code now}, leaving {@code written}
   * (a statement that counted the permits in the row it locked): allowed, the numbers a peek of the
   * new state gives, and the ticket's stamp, the window's start for the windows, the acquire's
   * instant for the buckets. The one reading of a state a store wrote, so a backend never re-derives
   * the reply's fields after its statement.
   */
  public static void written(Algorithm alg, long[] written, long now, Outcome out) {
    peek(alg, written, now, out);
    if (!out.corrupt() && !out.invalidClock()) {
      long stamp = alg instanceof FixedWindow || alg instanceof SlidingWindow ? written[0] : now;
      out.set(true, out.remaining(), out.resetAt(), 0, stamp, true);
    }
  }

  /** Sets {@code out} invalid or corrupt and returns true when no step may run at {@code now}. */
  private static boolean unusable(Algorithm alg, long[] st, long now, Outcome out) {
    if (!Checks.validClock(now)) {
      out.invalid();
      return true;
    }
    if (tooFarAhead(alg, st, now)) {
      out.corrupted();
      return true;
    }
    return false;
  }

  /**
   * Whether {@code st} lies further ahead of {@code now} than {@code alg} could have written it at a
   * reading at most {@link Checks#CLOCK_TOLERANCE_MICROS} after {@code now}: a window start, a bucket's
   * last update at most a capacity's refill after it (a bucket in settlement debt), a log entry at most
   * the reading, a GCRA arrival time at most two bursts' drain ({@code 2 * burst * period / rate},
   * settlement debt included) after it; each rounded up by 1 us, the same on every backend.
   */
  public static boolean tooFarAhead(Algorithm alg, long[] st, long now) {
    if (st[0] - now <= Checks.CLOCK_TOLERANCE_MICROS) {
      return false; // every horizon is at least the tolerance: the common case takes no division
    }
    long horizon = Checks.CLOCK_TOLERANCE_MICROS;
    if (alg instanceof Gcra g) {
      horizon += 2 * (g.burst() * g.periodMicros() / g.rate()) + 1; // a TAT with settlement debt (at most 2 bursts)
    } else if (alg instanceof TokenBucket tb) {
      horizon += tb.capacity() * tb.refillPeriodMicros() / tb.refillTokens() + 1; // a bucket a capacity in debt
    }
    return st[0] - now > horizon;
  }

  private static void step(Algorithm alg, long[] st, long now, long n, Outcome out, boolean charge) {
    if (alg instanceof FixedWindow fw) {
      fixedWindow(fw, st, now, n, out, charge);
    } else if (alg instanceof SlidingWindow sw) {
      slidingWindow(sw, st, now, n, out, charge);
    } else if (alg instanceof TokenBucket tb) {
      tokenBucket(tb, st, now, n, out, charge);
    } else if (alg instanceof Gcra g) {
      gcra(g, st, now, n, out, charge);
    } else {
      throw noLog();
    }
  }

  private static IllegalArgumentException noLog() {
    return new IllegalArgumentException("the sliding log keeps a SlidingLogState; use its methods instead of a long[] state");
  }

  /**
   * Returns {@code permits} counted under {@code stamp} at {@code now}: {@link #settle} by
   * {@code -permits}. Window algorithms give them back only while the window they were counted in is
   * still the current one; buckets take them back up to capacity. {@link Outcome#wrote()} tells
   * whether anything changed; the other fields are those of a peek after the refund.
   */
  public static void refund(Algorithm alg, long[] st, long now, long permits, long stamp, Outcome out) {
    settle(alg, st, now, -permits, stamp, out);
  }

  /**
   * Settles a reservation counted under {@code stamp} at its actual cost: {@code delta} is the
   * actual minus the reserved permits (|delta| at most the limit, validated by the caller).
   * <ul>
   *   <li>{@code delta < 0} gives {@code -delta} back, as a refund: a window only while the one of
   *       {@code stamp} is current (after it rolled, nothing), a bucket up to capacity.
   *   <li>{@code delta > 0} charges it, past the limit if need be, into debt of at most one more
   *       limit ({@link #debtCeiling(long, long)}): a window's count is charged in the window of
   *       {@code stamp} while it is current, otherwise in the current window (a fresh one opened at {@code now}
   *       when none is); a token bucket's balance goes at most one capacity below empty, kept as a
   *       later update time (the instant the debt is paid) with the remainder of a period's refill;
   *       GCRA's theoretical arrival time moves by the debt, at most twice the burst ahead of now
   *       (and never past 2^52 in its own units).
   * </ul>
   * Debt needs no new state shape: a window's count above its limit, a bucket's update time ahead of
   * the clock and a TAT beyond the burst all refuse until refill or the window's end pays them back.
   * {@link Outcome#wrote()} tells whether anything changed; the other fields are a peek's after it.
   */
  public static void settle(Algorithm alg, long[] st, long now, long delta, long stamp, Outcome out) {
    if (unusable(alg, st, now, out)) {
      return;
    }
    boolean wrote;
    if (alg instanceof FixedWindow fw) {
      boolean live = st[0] != 0 && now - st[0] < fw.windowMicros();
      if (delta < 0) {
        wrote = live && st[0] == stamp && st[1] > 0;
        if (wrote) {
          st[1] = Math.max(0, st[1] + delta);
        }
      } else if (live) {
        long c = charge(st[1], delta, debtCeiling(fw.limit(), 1));
        wrote = c != st[1];
        st[1] = c;
      } else {
        wrote = delta > 0;
        if (wrote) {
          st[0] = now;
          st[1] = Math.min(delta, debtCeiling(fw.limit(), 1));
        }
      }
    } else if (alg instanceof SlidingWindow sw) {
      long[] n = {st[0], st[1], st[2]};
      normalizeSliding(sw.windowMicros(), n, now);
      long c = delta < 0
          ? (n[0] == stamp ? Math.max(0, n[1] + delta) : n[1])
          : charge(n[1], delta, debtCeiling(sw.limit(), sw.windowMicros()));
      wrote = c != n[1];
      if (wrote) {
        st[0] = n[0];
        st[1] = c;
        st[2] = n[2];
      }
    } else if (alg instanceof TokenBucket tb) {
      long p = tb.refillPeriodMicros();
      long r = tb.refillTokens();
      long full = tb.capacity() * p;
      long b = balance(tb, st, now);
      long b2 = Math.max(-full, Math.min(full, b - delta * p));
      wrote = b2 != b;
      if (wrote && b2 >= 0) {
        st[0] = now;
        st[1] = b2;
      } else if (wrote) {
        long k = ceilDiv(-b2, r); // the debt is paid k microseconds from now, with k r + b2 (< r) to spare
        st[0] = now + k;
        st[1] = Math.min(full, k * r + b2);
      }
    } else if (alg instanceof Gcra g) {
      long ceiling = debtCeiling(g.burst() * g.periodMicros(), 1);
      if (delta < 0 && debtOverCap(g, st, now)) {
        // a clock behind the state: TAT' = now + (debt - n P) / Q = TAT + floorDiv(frac - n P, Q),
        // without forming the debt
        long x = st[1] + delta * g.periodMicros();
        long whole = st[0] + Math.floorDiv(x, g.rate());
        wrote = true;
        st[0] = Math.max(now, whole);
        st[1] = whole < now ? 0 : Math.floorMod(x, g.rate());
      } else if (delta > 0 && st[0] != 0 && st[0] - now > ceiling / g.rate() + 1) {
        wrote = false; // the debt is past its ceiling (a clock behind the state): nothing more to charge
      } else {
        long debt = gcraDebt(g, st, now);
        long d2 = delta < 0 ? Math.max(0, debt + delta * g.periodMicros()) : charge(debt, delta * g.periodMicros(), ceiling);
        wrote = d2 != debt;
        if (wrote) {
          setDebt(g, st, now, d2);
        }
      }
    } else {
      throw noLog();
    }
    peek(alg, st, now, out);
    out.wrote = wrote;
  }

  /**
   * The most a count (or GCRA's debt) may reach through settlements: twice the limit, one limit of
   * debt, but never so much that {@code ceiling x unit} passes 2^52 ({@link Checks#MAX_EXACT}), the
   * exact range every backend computes in (the sliding window multiplies its count by up to one
   * window). A limit already at that bound gets no debt.
   */
  public static long debtCeiling(long limit, long unit) {
    long most = Checks.MAX_EXACT / unit;
    return limit <= most / 2 ? 2 * limit : Math.max(limit, most);
  }

  /** {@code value + delta}, but no higher than {@code ceiling}; a value already at or over it stays. */
  static long charge(long value, long delta, long ceiling) {
    return value >= ceiling ? value : Math.min(ceiling, value + delta);
  }

  /**
   * A token bucket's balance at {@code now}, in scaled tokens: negative while it is in debt. A state
   * whose update time is ahead of the clock (a debt, or another node's clock) owes the refill
   * between now and then; the balance never goes below one capacity of debt.
   */
  private static long balance(TokenBucket tb, long[] st, long now) {
    long lag = st[0] - now;
    if (st[0] == 0 || lag <= 0) {
      return refill(tb, st, now);
    }
    long full = tb.capacity() * tb.refillPeriodMicros();
    return lag >= ceilDiv(st[1] + full, tb.refillTokens()) ? -full : st[1] - lag * tb.refillTokens();
  }

  /**
   * The time after which {@code st} can no longer matter: from then on it decides exactly like an
   * absent state, so it may be reclaimed (memory), expire (Redis TTL) or be swept (SQL). 0 for an
   * absent state.
   */
  public static long expiresAt(Algorithm alg, long[] st) {
    if (alg instanceof SlidingWindow sw) {
      return st[0] == 0 && st[1] == 0 && st[2] == 0 ? 0 : st[0] + 2 * sw.windowMicros();
    }
    if (st[0] == 0) {
      return 0;
    }
    if (alg instanceof FixedWindow fw) {
      return st[0] + fw.windowMicros();
    } else if (alg instanceof TokenBucket tb) {
      return st[0] + ceilDiv(tb.capacity() * tb.refillPeriodMicros() - st[1], tb.refillTokens());
    } else if (alg instanceof Gcra) {
      return st[0] + (st[1] > 0 ? 1 : 0);
    }
    throw noLog();
  }

  /**
   * The instant (epoch us) from which a ticket of {@code alg} stamped {@code stamp} no longer
   * refunds or settles: its stamp plus twice the span its quota covers ({@link AlgorithmKind#quotaMicros}:
   * a window, a token bucket's full refill, GCRA's burst drain), at most {@link Checks#MAX_TICKET_LIFE_MICROS}. Every tier answers
   * no effect from then on, so a store keeps a ticket's spent record only until then and sweeps it
   * with the state.
   */
  public static long ticketExpiresAt(Algorithm alg, long stamp) {
    return stamp + Math.min(2 * AlgorithmKind.quotaMicros(alg), Checks.MAX_TICKET_LIFE_MICROS);
  }

  /** Whether a ticket of {@code alg} stamped {@code stamp} can still change a budget at {@code now} ({@link #ticketExpiresAt}). */
  public static boolean ticketLive(Algorithm alg, long stamp, long now) {
    return now < ticketExpiresAt(alg, stamp);
  }

  /**
   * How long after a reading what a step at that reading writes can still matter: {@link #expiresAt}
   * (or {@link SlidingLogState#expiresAt}) of the state a step at {@code now} leaves is at most
   * {@code now + lifetime(alg)}, as long as the instants the state kept from earlier steps (a window
   * start, a bucket's update time, an arrival time, a log entry) were written at readings no later
   * than those steps' own. A window or a log: one window; the sliding window: two; a token bucket: a
   * capacity in debt paid off, then a refill from empty (two full refills); GCRA: two bursts' drain
   * (settlement debt included); each rounded up. A store that expires state on a clock of its own
   * (Redis's TTL) needs it to know how long a write can still be counted after its reading.
   */
  public static long lifetime(Algorithm alg) {
    if (alg instanceof FixedWindow fw) {
      return fw.windowMicros();
    } else if (alg instanceof SlidingWindow sw) {
      return 2 * sw.windowMicros();
    } else if (alg instanceof TokenBucket || alg instanceof Gcra) {
      return 2 * (AlgorithmKind.quotaMicros(alg) + 1);
    }
    return ((SlidingLog) alg).windowMicros();
  }

  // ---------------------------------------------------------------------------------------------
  // Fixed window.
  //   live   = start != 0 && now - start < W      (a clock behind start keeps the window)
  //   count  = live ? state count : 0;  start = live ? state start : now
  //   allow  iff count + n <= L;  writes [start, count + n]
  //   remaining = L - count(after);  resetAt = start + W;  retryAfter = start + W - now
  //   stamp  = start
  // ---------------------------------------------------------------------------------------------
  private static void fixedWindow(FixedWindow fw, long[] st, long now, long n, Outcome out, boolean charge) {
    long w = fw.windowMicros();
    long limit = fw.limit();
    boolean live = st[0] != 0 && now - st[0] < w;
    long start = live ? st[0] : now;
    long count = live ? st[1] : 0;
    long resetAt = start + w;
    if (count + n <= limit) {
      if (charge) {
        st[0] = start;
        st[1] = count + n;
        out.set(true, limit - count - n, resetAt, 0, start, true);
      } else {
        out.set(true, limit - count, resetAt, 0, 0, false);
      }
    } else {
      out.set(false, limit - count, resetAt, resetAt - now, 0, false);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Sliding window (two-window weighted counter), W = window, windows start at multiples of W.
  //   normalise to now: the current window a = now - now mod W; a state one window back becomes
  //   [a, 0, cur]; older becomes [a, 0, 0]; a state ahead of the clock is kept, with elapsed 0.
  //   (No "absent" case: all zeros normalises to [a, 0, 0]; a start of 0 with counts is the window
  //   [0, W) of a clock under one window.)
  //   e        = max(0, now - start)
  //   estimate = cur + ceil(prev * (W - e) / W)          (rounded up: never weaker than exact)
  //   allow    iff estimate + n <= L; writes [start, cur + n, prev]
  //   remaining = L - estimate(after); resetAt = start + W (end of the current window); stamp = start
  //   retryAfter: the first e' in this window with cur + ceil(prev (W - e') / W) + n <= L, that is
  //   e' = W - floor((L - n - cur) W / prev); if none, the next window where the weight is cur:
  //   e'' = max(0, W - floor((L - n) W / cur)), at start + W + e''.
  // ---------------------------------------------------------------------------------------------
  private static void slidingWindow(SlidingWindow sw, long[] st, long now, long n, Outcome out, boolean charge) {
    long w = sw.windowMicros();
    long limit = sw.limit();
    long s0 = st[0], s1 = st[1], s2 = st[2];
    long start, cur, prev;
    long a = now - Math.floorMod(now, w);
    if (s0 + w < a) {
      start = a; cur = 0; prev = 0;
    } else if (s0 + w == a) {
      start = a; cur = 0; prev = s1;
    } else {
      start = s0; cur = s1; prev = s2;
    }
    long e = Math.max(0, now - start);
    long estimate = cur + (prev == 0 ? 0 : ceilDiv(prev * (w - e), w));
    long resetAt = start + w;
    if (estimate + n <= limit) {
      if (charge) {
        st[0] = start;
        st[1] = cur + n;
        st[2] = prev;
        out.set(true, limit - estimate - n, resetAt, 0, start, true);
      } else {
        out.set(true, limit - estimate, resetAt, 0, 0, false);
      }
      return;
    }
    long avail = limit - n - cur;
    long at = -1;
    if (avail >= 0 && prev > 0) {
      long ePrime = w - Math.floorDiv(avail * w, prev);
      if (ePrime < w) {
        at = start + ePrime;
      }
    }
    if (at < 0) {
      long eNext = cur == 0 ? 0 : Math.max(0, w - Math.floorDiv((limit - n) * w, cur));
      at = start + w + eNext;
    }
    out.set(false, limit - estimate, resetAt, at - now, 0, false);
  }

  private static void normalizeSliding(long w, long[] st, long now) {
    long a = now - Math.floorMod(now, w);
    if (st[0] + w < a) {
      st[0] = a; st[1] = 0; st[2] = 0;
    } else if (st[0] + w == a) {
      st[2] = st[1]; st[1] = 0; st[0] = a;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Token bucket, C = capacity, R = refill tokens, P = refill period. Tokens are kept scaled by P, so
  // a continuous refill of R/P tokens per microsecond adds exactly R scaled tokens per microsecond.
  //   full = C * P;  t = max(now, last);  an absent bucket is full
  //   scaled = min(full, scaled + (t - last) * R)       (computed without overflow)
  //   allow iff scaled >= n * P; writes [t, scaled - n P]
  //   remaining = floor(scaled(after) / P); resetAt = t + ceil((full - scaled(after)) / R)
  //   retryAfter = t + ceil((n P - scaled) / R) - now
  // ---------------------------------------------------------------------------------------------
  private static void tokenBucket(TokenBucket tb, long[] st, long now, long n, Outcome out, boolean charge) {
    long p = tb.refillPeriodMicros();
    long r = tb.refillTokens();
    long full = tb.capacity() * p;
    long t = st[0] == 0 ? now : Math.max(now, st[0]);
    long s = refill(tb, st, now);
    long need = n * p;
    if (s >= need) {
      long after = charge ? s - need : s;
      if (charge) {
        st[0] = t;
        st[1] = after;
      }
      out.set(true, after / p, t + ceilDiv(full - after, r), 0, charge ? now : 0, charge); // stamp: the acquire's instant
    } else {
      out.set(false, s / p, t + ceilDiv(full - s, r), t + ceilDiv(need - s, r) - now, 0, false);
    }
  }

  /** Scaled tokens at {@code now} (or at the state's time if the clock is behind it). */
  static long refill(TokenBucket tb, long[] st, long now) {
    long full = tb.capacity() * tb.refillPeriodMicros();
    if (st[0] == 0) {
      return full;
    }
    long s = st[1];
    long elapsed = now - st[0];
    if (elapsed <= 0) {
      return s;
    }
    // Full once elapsed >= ceil((full - s) / R), that is once elapsed R >= full - s: tested without
    // the division, which dominated a refusal's cost; a product past 2^63 is past any gap.
    long r = tb.refillTokens();
    long added = elapsed * r;
    return Math.multiplyHigh(elapsed, r) != 0 || added < 0 || added >= full - s ? full : s + added;
  }

  // ---------------------------------------------------------------------------------------------
  // GCRA, rate Q per period P, burst B. The theoretical arrival time TAT = tat + frac / Q microseconds.
  // Work in units of 1/Q microsecond: one request costs P (its emission interval P/Q, times Q).
  //   debt = max(0, (tat - now) Q + frac)                 (how far TAT is ahead of now)
  //   cap  = B P
  //   allow iff debt + n P <= cap; then TAT' = now + (debt + n P) / Q, kept as [whole, remainder]
  //   remaining = floor((cap - debt(after)) / P); resetAt = now + ceil(debt(after) / Q)
  //   retryAfter = ceil((debt + n P - cap) / Q)
  //   A clock behind the state by more than cap / Q (debt over cap, which (tat - now) Q could take
  //   past any integer range): refused, remaining 0, resetAt = tat + ceil(frac / Q),
  //   retryAfter = (tat - now) + ceil((frac + n P - cap) / Q): the same numbers, without the debt.
  // ---------------------------------------------------------------------------------------------
  private static void gcra(Gcra g, long[] st, long now, long n, Outcome out, boolean charge) {
    long p = g.periodMicros();
    long q = g.rate();
    long cap = g.burst() * p;
    long need = n * p;
    if (debtOverCap(g, st, now)) {
      long ahead = st[0] - now;
      out.set(false, 0, st[0] + ceilDiv(st[1], q), ahead + ceilDiv(st[1] + need - cap, q), 0, false);
      return;
    }
    long debt = gcraDebt(g, st, now);
    if (debt + need <= cap) {
      long after = charge ? debt + need : debt;
      if (charge) {
        setDebt(g, st, now, after);
      }
      out.set(true, (cap - after) / p, now + ceilDiv(after, q), 0, charge ? now : 0, charge); // stamp: the acquire's instant
    } else {
      out.set(false, (cap - debt) / p, now + ceilDiv(debt, q), ceilDiv(debt + need - cap, q), 0, false);
    }
  }

  /** Whether the arrival time is more than cap / Q ahead of now, which puts the debt over cap. */
  static boolean debtOverCap(Gcra g, long[] st, long now) {
    long ahead = st[0] - now;
    if (st[0] == 0 || ahead <= 0) {
      return false;
    }
    // ahead > floor(B P / Q) exactly when ahead Q > B P: no division on every step; a product past
    // 2^63 is past any cap.
    long q = g.rate();
    long owed = ahead * q;
    return Math.multiplyHigh(ahead, q) != 0 || owed < 0 || owed > g.burst() * g.periodMicros();
  }

  private static long gcraDebt(Gcra g, long[] st, long now) {
    long tat = st[0];
    if (tat == 0 || tat < now) {
      return 0;
    }
    return (tat - now) * g.rate() + st[1];
  }

  private static void setDebt(Gcra g, long[] st, long now, long debt) {
    st[0] = now + debt / g.rate();
    st[1] = debt % g.rate();
  }

  /** Ceiling of {@code a / b} for {@code a >= 0, b > 0}. */
  static long ceilDiv(long a, long b) {
    return -Math.floorDiv(-a, b);
  }
}
