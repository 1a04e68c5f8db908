package dev.sluice.spi;

import java.util.ArrayDeque;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Where concurrent acquires for one budget meet (request coalescing): one lane per (policy, key)
 * with a store call in flight. The first request of an idle lane leads and goes to the store at
 * once; requests that arrive while a call is in flight queue in arrival order; when the call
 * finishes, up to {@code maxBatch} of them leave together as one batch, decided by the store in that
 * order. A lane with nothing in flight and nothing queued is removed, so the table holds only
 * budgets with a call in flight.
 *
 * <p>Handing a lane on is iterative: one thread at a time takes the next batch and starts its call
 * ({@link #finished}, {@link #next}, {@link #started}). A call that finishes before its start has
 * returned (a store that fails at once, such as Redis while disconnected, completes the call inline,
 * on the starting thread) only marks the lane; the starting thread then hands it on again. The
 * obvious way, the completion handing the lane on itself, recursed once per batch while the store
 * failed at once, until a {@link StackOverflowError} inside a completion left the lane busy for good
 * (issue 26, finding 1).
 */
final class Lanes {
  /** A request queued in a lane. */
  abstract static class Waiter {
    final long permits;
    /** Its clock reading ({@link Backend#STORE_CLOCK} for a store clock). */
    final long now;
    /** When it stops waiting, on the limiter's deadline clock. */
    final long deadline;
    volatile Lane lane;
    /** Withdrawn by its caller (its deadline passed): never sent. Guarded by the lane's monitor. */
    private boolean withdrawn;

    Waiter(long permits, long now, long deadline) {
      this.permits = permits;
      this.now = now;
      this.deadline = deadline;
    }

    /** The result of the batch it went in, or the error of that call; called once. */
    abstract void done(StepResult r, Throwable error);

    /** Hands a synchronous waiter the batch it is to run on its own thread. */
    void run(Waiter[] batch) {
      throw new IllegalStateException("an asynchronous waiter runs no batch");
    }
  }

  /** One budget's lane; guarded by its own monitor. */
  static final class Lane {
    final Object id;
    private boolean busy;
    private boolean gone;
    /** A thread is taking the next batch and starting its call. */
    private boolean handing;
    /** The call being started has already finished: the thread handing the lane on goes on. */
    private boolean finishedEarly;
    private final ArrayDeque<Waiter> queue = new ArrayDeque<>();

    Lane(Object id) {
      this.id = id;
    }
  }

  private final ConcurrentHashMap<Object, Lane> lanes = new ConcurrentHashMap<>();
  private final int maxBatch;

  Lanes(int maxBatch) {
    this.maxBatch = maxBatch;
  }

  /**
   * Joins {@code id}'s lane: returns the lane when {@code w} leads (nothing was in flight: the
   * caller makes the store call and then calls {@link #next}), or null when {@code w} was queued.
   */
  Lane enter(Object id, Waiter w) {
    while (true) {
      Lane lane = lanes.computeIfAbsent(id, Lane::new);
      synchronized (lane) {
        if (lane.gone) {
          continue; // removed between the lookup and the lock: take the new one
        }
        synchronized (w) {
          if (w.withdrawn) {
            return null; // its deadline passed before it got here: it goes nowhere
          }
          w.lane = lane;
        }
        if (!lane.busy) {
          lane.busy = true;
          return lane;
        }
        lane.queue.addLast(w);
        return null;
      }
    }
  }

  /**
   * Called when a call of {@code lane} finished: true when the caller is now to hand the lane on
   * ({@link #next}, then {@link #started}), false when the thread starting that very call is still
   * in its start and will hand the lane on once its start returns.
   */
  boolean finished(Lane lane) {
    synchronized (lane) {
      if (lane.handing) {
        lane.finishedEarly = true;
        return false;
      }
      lane.handing = true;
      return true;
    }
  }

  /**
   * The next batch of a lane this thread hands on, oldest first, or null when none is queued (the
   * lane is then idle and removed).
   */
  Waiter[] next(Lane lane) {
    synchronized (lane) {
      int n = Math.min(maxBatch, lane.queue.size());
      if (n == 0) {
        lane.busy = false;
        lane.handing = false;
        lane.gone = true;
        lanes.remove(lane.id, lane);
        return null;
      }
      Waiter[] batch = new Waiter[n];
      for (int i = 0; i < n; i++) {
        batch[i] = lane.queue.pollFirst();
      }
      return batch;
    }
  }

  /**
   * Called once the call of the batch {@link #next} gave has been started: true when that call has
   * already finished (the caller hands the lane on again), false when its completion will.
   */
  boolean started(Lane lane) {
    synchronized (lane) {
      if (lane.finishedEarly) {
        lane.finishedEarly = false;
        return true;
      }
      lane.handing = false;
      return false;
    }
  }

  /**
   * Takes {@code w} out of its queue if no batch has taken it yet, or keeps it from joining one
   * if it has not joined yet; true when it will never reach the store.
   */
  boolean withdraw(Waiter w) {
    while (true) {
      Lane lane = w.lane;
      if (lane == null) {
        synchronized (w) { // not in a lane yet: enter() will see the mark
          if (w.lane == null) {
            w.withdrawn = true;
            return true;
          }
        }
        continue;
      }
      synchronized (lane) {
        w.withdrawn = true;
        return lane.queue.remove(w);
      }
    }
  }

  /** Budgets with a call in flight (for tests). */
  int size() {
    return lanes.size();
  }

  /** Lanes still busy (for tests): zero once every call has finished and its lane been handed on. */
  int busy() {
    int n = 0;
    for (Lane lane : lanes.values()) {
      synchronized (lane) {
        n += lane.busy ? 1 : 0;
      }
    }
    return n;
  }
}
