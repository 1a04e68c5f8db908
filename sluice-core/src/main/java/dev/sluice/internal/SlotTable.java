package dev.sluice.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Consumer;
import java.util.function.IntFunction;

/**
 * The keyed slot table of the hashed-slot structures ({@code HashedSlotRateLimiter}'s state arrays,
 * a keyed {@code Composition}'s limiter sets): {@code slots} entries plus one default entry for a
 * call without a key, a key hashed to its entry by {@link SeededHash} with the table's seed, each
 * entry built on first use and at most once.
 *
 * <p>Why not a map: a map grows with the keys it has seen, and evicting from it would hand an evicted
 * key a fresh allowance; a fixed table bounds memory by the slot count whatever the keys, at the
 * price of colliding keys sharing a budget (nginx {@code limit_req}). Entries are built under one
 * lock so the number ever built is bounded by the slot count exactly, not "about", even when threads
 * race for a fresh slot; a built entry is read without the lock.
 */
public final class SlotTable<T> {
  private final int slots;
  private final long seed;
  private final IntFunction<? extends T> build;
  private final AtomicReferenceArray<T> table;
  private final Object buildLock = new Object();
  private int built; // guarded by buildLock
  private volatile boolean closed;

  /**
   * {@code slots} hashed entries and the default one, built by {@code build} (given the entry's
   * index, {@code slots} for the default) on first use; {@code build} must not return null.
   */
  public SlotTable(int slots, long seed, IntFunction<? extends T> build) {
    this.slots = (int) Checks.positive("slots", slots);
    this.seed = seed;
    this.build = Objects.requireNonNull(build, "build");
    this.table = new AtomicReferenceArray<>(slots + 1);
  }

  /** The hashed entries, the default one not counted. */
  public int slots() {
    return slots;
  }

  /** The index of {@code key}'s entry: {@link #slots()} (the default entry) for a null key. */
  public int indexOf(String key) {
    return key == null ? slots : SeededHash.slot(seed, key, slots);
  }

  /** {@code key}'s entry, built if needed; null once the table is closed. */
  public T forKey(String key) {
    return at(indexOf(key));
  }

  /** The entry at {@code index} (0..{@link #slots()}), built if needed; null once the table is closed. */
  public T at(int index) {
    T t = table.get(index);
    if (t != null) {
      return t;
    }
    synchronized (buildLock) {
      if (closed) {
        return null;
      }
      t = table.get(index);
      if (t == null) {
        t = build.apply(index);
        if (t == null) {
          throw new IllegalStateException("the slot table's builder returned null for slot " + index);
        }
        table.set(index, t);
        built++;
      }
      return t;
    }
  }

  /** The entries built so far. */
  public int built() {
    synchronized (buildLock) {
      return built;
    }
  }

  /** Calls {@code action} with every entry built so far. */
  public void forEachBuilt(Consumer<? super T> action) {
    for (int i = 0; i <= slots; i++) {
      T t = table.get(i);
      if (t != null) {
        action.accept(t);
      }
    }
  }

  /**
   * Closes the table and returns the entries it had built: afterwards no entry is built or returned.
   * Under the build lock, so an entry being built right now is either returned here or never stored.
   */
  public List<T> close() {
    List<T> released = new ArrayList<>();
    synchronized (buildLock) {
      closed = true;
      for (int i = 0; i <= slots; i++) {
        T t = table.getAndSet(i, null);
        if (t != null) {
          released.add(t);
        }
      }
      built = 0;
    }
    return released;
  }
}
