package dev.sluice.memory;

import dev.sluice.Algorithm;
import dev.sluice.model.Outcome;
import dev.sluice.model.ReferenceModel;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The lock word of a memory-tier entry, shared by {@link MemoryRateLimiter} and
 * {@link HashedSlotRateLimiter}: an entry is a bare {@code long[]} of the reference model's state
 * words followed by this word. The lock is a compare-and-set on it, held for the few instructions of
 * a step; each unlock bumps a version, and a hint says the last locked step refused, so that a
 * refusal can be decided on a snapshot read without the lock and validated by the version (a
 * seqlock read, {@link #refusedWithoutLock}). A dead entry (reclaimed or reset) can never be locked
 * again.
 */
final class EntryLock {
  /** Lock word: bit 0 held, bit 1 "the last locked step refused", bits 2.. a version bumped by each unlock. */
  static final long HELD = 1;
  static final long REFUSING = 2;
  static final long VERSION = 4;
  /** A reclaimed or reset entry: never lockable again (held bit set, no owner). */
  static final long DEAD = -1;
  static final VarHandle WORD = MethodHandles.arrayElementVarHandle(long[].class);

  private EntryLock() {}

  /**
   * Spins until the entry's lock (its last word) is ours; false if the entry is dead. Held for a
   * handful of instructions only.
   */
  static boolean lock(long[] w) {
    int lock = w.length - 1;
    for (int spins = 0; ; spins++) {
      long v = (long) WORD.getAcquire(w, lock);
      if (v == DEAD) {
        return false;
      }
      if ((v & HELD) == 0 && WORD.compareAndSet(w, lock, v, v | HELD)) {
        return true;
      }
      if (spins < 64) {
        Thread.onSpinWait();
      } else {
        Thread.yield();
      }
    }
  }

  /** Releases the lock, bumping the version and keeping the refusing hint as it was. */
  static void unlock(long[] w) {
    int lock = w.length - 1;
    long v = w[lock];
    WORD.setRelease(w, lock, (v & ~(HELD | REFUSING)) + VERSION | (v & REFUSING));
  }

  /** Releases the lock, bumping the version and setting the refusing hint to {@code refusing}. */
  static void unlock(long[] w, boolean refusing) {
    int lock = w.length - 1;
    long v = w[lock];
    WORD.setRelease(w, lock, (v & ~(HELD | REFUSING)) + VERSION | (refusing ? REFUSING : 0));
  }

  /**
   * The refusal fast path: when the key's last locked step refused, decide on a snapshot of its state
   * read without the lock (a seqlock read: the lock word, the state, the lock word again). A refusal
   * writes nothing, so a refusal computed on a consistent snapshot is the decision; a key at its limit
   * then costs reads only, and threads refusing on one hot key share its cache line instead of
   * bouncing it. True when {@code out} holds such a refusal; false sends the caller to the locked step
   * (the hint is off, a writer is active, the snapshot was torn, or the request now fits).
   */
  static boolean refusedWithoutLock(Algorithm alg, long[] w, long now, long permits, Outcome out) {
    int lock = w.length - 1;
    long v = (long) WORD.getAcquire(w, lock);
    if ((v & (HELD | REFUSING)) != REFUSING) {
      return false;
    }
    long[] snapshot = new long[ReferenceModel.STATE_SIZE];
    snapshot[0] = w[0];
    snapshot[1] = w[1];
    if (lock == 3) {
      snapshot[2] = w[2];
    }
    VarHandle.acquireFence(); // the state reads above happen before the lock word is read again
    if ((long) WORD.getOpaque(w, lock) != v) {
      return false;
    }
    ReferenceModel.acquire(alg, snapshot, now, permits, out);
    return !out.allowed() && !out.invalidClock();
  }

  /** Whether the last locked step on the entry refused. */
  static boolean isRefusing(long[] w) {
    return (w[w.length - 1] & REFUSING) != 0;
  }

  /** Marks a locked entry dead: no one locks it again. */
  static void kill(long[] w) {
    WORD.setRelease(w, w.length - 1, DEAD);
  }
}
