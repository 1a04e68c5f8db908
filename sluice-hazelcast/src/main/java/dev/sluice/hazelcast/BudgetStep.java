package dev.sluice.hazelcast;

import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.core.HazelcastInstanceAware;
import com.hazelcast.map.EntryProcessor;
import com.hazelcast.map.ExtendedMapEntry;
import dev.sluice.Algorithm;
import dev.sluice.Ticker;
import dev.sluice.internal.Checks;
import dev.sluice.model.Outcome;
import dev.sluice.model.ReferenceModel;
import java.io.Serializable;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * One step of one budget, run by Hazelcast on the partition owner of the budget's entry, under the
 * entry's lock: read the {@link Budget}, run the core's {@link ReferenceModel} at the reading
 * ({@code now}, or the member's clock when it is {@code STORE_CLOCK}), and, when the step changed
 * anything, write the new budget with a time to live that ends when neither its state
 * ({@link ReferenceModel#expiresAt}) nor any of its spent tickets matters any more, plus the grace.
 * A refund or a settlement records its ticket as spent in that same write. The backup replicas get
 * the written entry as it is ({@link #getBackupProcessor}), never a second run of the model, so a
 * backup holds exactly what the owner decided whatever the backup member's clock says.
 *
 * <p>Answers a {@code long[]}: {@code {status, allowed, remaining, resetAt, retryAfter, stamp, wrote}}
 * per decision (status 0 decided, 1 corrupt state, 2 invalid clock); a batch answers seven per
 * request, or one failure for all of them. A budget with an override is decided by it, whatever
 * algorithm the step carries, and its reply ends with the override (kind and three numbers).
 * Serialized with Java serialization.
 */
final class BudgetStep implements EntryProcessor<String, Object, long[]>, HazelcastInstanceAware, Serializable {
  private static final long serialVersionUID = 1L;

  static final byte ACQUIRE = 'a';
  static final byte PEEK = 'p';
  static final byte REFUND = 'r';
  static final byte OVERRUN = 'o';
  static final byte BATCH = 'b';
  /** Sets the budget's override to this step's algorithm ({@code dev.sluice.KeyOverrides}); answers {had}. */
  static final byte SET_OVERRIDE = 'S';
  /** Clears the budget's override; answers {had}. */
  static final byte CLEAR_OVERRIDE = 'C';
  /** Reads the budget's override: its kind and three numbers, or nothing. */
  static final byte GET_OVERRIDE = 'G';
  /** Forgets the budget's count (a reset): removes the entry, or keeps only its override. */
  static final byte RESET = 'R';

  static final int FIELDS = 7;
  static final long DECIDED = 0;
  static final long CORRUPT = 1;
  static final long INVALID_CLOCK = 2;
  /**
   * What a map record's clock can lose: Hazelcast 5.5 keeps a record's last update time and its time
   * to live in whole seconds (measured: {@code lastUpdateTime} truncated to the second, a time to live
   * of 1,400 ms read back as 1,000), and expires the entry at their sum. So a time to live is rounded
   * up to whole seconds and one second more is added: otherwise an entry could expire up to two
   * seconds before its state stops mattering, and admit more than the limit.
   */
  static final long RECORD_CLOCK_MILLIS = 1_000;

  private final byte op;
  private final int kind;
  private final long n0;
  private final long n1;
  private final long n2;
  /** The supplied reading, or 0: the member's clock. */
  private final long now;
  private final long permits;
  /** A batch's permits, in order; null otherwise. */
  private final long[] batch;
  /** The ticket a refund or an overrun spends: its stamp, id and end of life; 0 otherwise. */
  private final long stamp;
  private final long ticketHi;
  private final long ticketLo;
  private final long ticketEnd;
  /** How much longer than its state and tickets matter an entry lives, in milliseconds. */
  private final long graceMillis;

  private transient HazelcastInstance member;
  /** What the owner wrote, for its backups; null when it wrote nothing. */
  private transient Budget written;
  private transient long writtenTtlMillis;
  /** Whether the owner removed the entry (an override cleared from a budget with nothing left). */
  private transient boolean removed;

  BudgetStep(byte op, int kind, long[] numbers, long now, long permits, long[] batch, long stamp, long ticketHi,
             long ticketLo, long ticketEnd, long graceMillis) {
    this.op = op;
    this.kind = kind;
    this.n0 = numbers[0];
    this.n1 = numbers[1];
    this.n2 = numbers[2];
    this.now = now;
    this.permits = permits;
    this.batch = batch;
    this.stamp = stamp;
    this.ticketHi = ticketHi;
    this.ticketLo = ticketLo;
    this.ticketEnd = ticketEnd;
    this.graceMillis = graceMillis;
  }

  @Override public void setHazelcastInstance(HazelcastInstance hazelcastInstance) {
    this.member = hazelcastInstance;
  }

  /** The reading this step decides at: the supplied one, or the owner member's clock. */
  private long clock() {
    if (now != 0) {
      return now;
    }
    Object t = member == null ? null : member.getUserContext().get(HazelcastRateLimiter.MEMBER_CLOCK);
    return (t instanceof Ticker ticker ? ticker : Ticker.system()).nowMicros();
  }

  @Override public long[] process(Map.Entry<String, Object> entry) {
    long at = clock();
    if (!Checks.validClock(at)) {
      return failure(INVALID_CLOCK);
    }
    Object value = entry.getValue();
    if (value != null && !(value instanceof Budget)) {
      return failure(CORRUPT); // not a value Sluice wrote: never trusted, never overwritten
    }
    Budget b = (Budget) value;
    if (op == SET_OVERRIDE || op == CLEAR_OVERRIDE || op == GET_OVERRIDE) {
      return override(entry, b, at);
    }
    if (op == RESET) {
      if (b != null && b.override != null) { // the override is configuration: it stays, the count goes
        write(entry, new Budget((int) b.override[0], new long[ReferenceModel.STATE_SIZE], new long[0], b.override), NEVER);
      } else if (b != null) {
        removed = true;
        entry.setValue(null);
      }
      return new long[0];
    }
    long[] ov = b == null ? null : b.override;
    int kind = ov == null ? this.kind : (int) ov[0]; // the key's override decides, whatever the step carries
    Algorithm alg;
    try {
      alg = ov == null ? Wire.algorithm(kind, n0, n1, n2) : Wire.algorithm(kind, ov[1], ov[2], ov[3]);
    } catch (IllegalArgumentException notOurs) {
      return failure(CORRUPT);
    }
    long[] st = new long[ReferenceModel.STATE_SIZE];
    if (b != null) {
      b.load(kind, st);
    }
    long[] spent = b == null ? new long[0] : b.spent;
    Outcome out = new Outcome();
    long[] reply;
    boolean wrote;
    if (op == BATCH) {
      reply = new long[FIELDS * batch.length];
      wrote = false;
      for (int i = 0; i < batch.length; i++) {
        ReferenceModel.acquire(alg, st, at, batch[i], out);
        if (out.corrupt() || out.invalidClock()) {
          return reply(out); // one failure for every request; nothing written
        }
        fill(out, reply, FIELDS * i);
        wrote |= out.wrote();
      }
    } else {
      boolean ticket = op == REFUND || op == OVERRUN;
      if (ticket && (Budget.spent(spent, ticketHi, ticketLo, at) || at >= ticketEnd)) {
        // applied already (a retry after an unknown outcome), or past its life: no effect
        ReferenceModel.peek(alg, st, at, out);
        return out.corrupt() || out.invalidClock() ? reply(out)
            : withOverride(new long[] {DECIDED, out.allowed() ? 1 : 0, out.remaining(), out.resetAt(), out.retryAfter(), 0, 0}, ov);
      }
      switch (op) {
        case ACQUIRE -> ReferenceModel.acquire(alg, st, at, permits, out);
        case PEEK -> ReferenceModel.peek(alg, st, at, out);
        case REFUND -> ReferenceModel.refund(alg, st, at, permits, stamp, out);
        default -> ReferenceModel.settle(alg, st, at, permits, stamp, out);
      }
      reply = reply(out);
      wrote = out.wrote();
      if (wrote && ticket) {
        spent = Budget.spend(spent, ticketHi, ticketLo, ticketEnd, at);
      }
    }
    if (wrote) {
      spent = Budget.live(spent, at);
      long ends = Math.max(ReferenceModel.expiresAt(alg, st), Budget.latestEnd(spent));
      write(entry, new Budget(kind, st, spent, ov), ov != null ? NEVER : ttlMillis(ends - at, graceMillis));
    }
    return reply[0] == DECIDED ? withOverride(reply, ov) : reply;
  }

  /** A time to live Hazelcast reads as "never expires": an entry with an override is configuration. */
  private static final long NEVER = 0;

  private void write(Map.Entry<String, Object> entry, Budget value, long ttlMillis) {
    written = value;
    writtenTtlMillis = ttlMillis;
    ((ExtendedMapEntry<String, Object>) entry).setValue(value, ttlMillis, TimeUnit.MILLISECONDS);
  }

  /** {@code reply} followed by the override that decided it, when there is one. */
  private static long[] withOverride(long[] reply, long[] ov) {
    if (ov == null) {
      return reply;
    }
    long[] r = Arrays.copyOf(reply, reply.length + ov.length);
    System.arraycopy(ov, 0, r, reply.length, ov.length);
    return r;
  }

  /**
   * Sets, clears or reads the budget's override. Setting keeps the count when the algorithm that
   * decided so far is of the same kind, else the key starts afresh; clearing keeps it for the
   * caller's algorithm (this step's) likewise, and removes an entry that then holds nothing that
   * matters.
   */
  private long[] override(Map.Entry<String, Object> entry, Budget b, long at) {
    long[] had = b == null ? null : b.override;
    if (op == GET_OVERRIDE) {
      return had == null ? new long[0] : had.clone();
    }
    if (op == CLEAR_OVERRIDE && had == null) {
      return new long[] {0};
    }
    long[] ov = op == SET_OVERRIDE ? new long[] {kind, n0, n1, n2} : null;
    long[] st = new long[ReferenceModel.STATE_SIZE];
    if (b != null) {
      b.load(kind, st); // the state of this kind, if that is what the budget holds; else absent
    }
    long[] spent = b == null ? new long[0] : Budget.live(b.spent, at);
    if (ov != null) {
      write(entry, new Budget(kind, st, spent, ov), NEVER);
    } else {
      Algorithm alg = Wire.algorithm(kind, n0, n1, n2);
      long ends = Math.max(ReferenceModel.expiresAt(alg, st), Budget.latestEnd(spent));
      if (ends <= at) {
        written = null;
        removed = true;
        entry.setValue(null);
      } else {
        write(entry, new Budget(kind, st, spent), ttlMillis(ends - at, graceMillis));
      }
    }
    return new long[] {had == null ? 0 : 1};
  }

  /**
   * The time to live of an entry whose state and tickets matter for {@code micros} more: that plus the
   * grace, rounded up to whole seconds, plus {@link #RECORD_CLOCK_MILLIS}; never 0, which Hazelcast
   * reads as "never expires".
   */
  static long ttlMillis(long micros, long graceMillis) {
    long need = Math.max(0, micros) + graceMillis * 1_000;
    return (need + 999_999) / 1_000_000 * 1_000 + RECORD_CLOCK_MILLIS;
  }

  /** The backups get what the owner wrote, with its time to live (or its removal); nothing when it wrote nothing. */
  @Override public EntryProcessor<String, Object, long[]> getBackupProcessor() {
    return removed ? new Replica(null, 0) : written == null ? null : new Replica(written, writtenTtlMillis);
  }

  private static long[] failure(long status) {
    long[] r = new long[FIELDS];
    r[0] = status;
    return r;
  }

  private static long[] reply(Outcome out) {
    if (out.corrupt()) {
      return failure(CORRUPT);
    }
    if (out.invalidClock()) {
      return failure(INVALID_CLOCK);
    }
    long[] r = new long[FIELDS];
    fill(out, r, 0);
    return r;
  }

  private static void fill(Outcome out, long[] r, int at) {
    r[at] = DECIDED;
    r[at + 1] = out.allowed() ? 1 : 0;
    r[at + 2] = out.remaining();
    r[at + 3] = out.resetAt();
    r[at + 4] = out.retryAfter();
    r[at + 5] = out.stamp();
    r[at + 6] = out.wrote() ? 1 : 0;
  }

  /** The owner's write, applied as it is on a backup replica. */
  static final class Replica implements EntryProcessor<String, Object, long[]>, Serializable {
    private static final long serialVersionUID = 1L;
    private final Budget value;
    private final long ttlMillis;

    Replica(Budget value, long ttlMillis) {
      this.value = value;
      this.ttlMillis = ttlMillis;
    }

    @Override public long[] process(Map.Entry<String, Object> entry) {
      if (value == null) {
        entry.setValue(null);
      } else {
        ((ExtendedMapEntry<String, Object>) entry).setValue(value, ttlMillis, TimeUnit.MILLISECONDS);
      }
      return null;
    }

    @Override public EntryProcessor<String, Object, long[]> getBackupProcessor() {
      return null;
    }
  }
}
