package dev.sluice.internal;

import java.util.ArrayList;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinWorkerThread;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The deadlines of asynchronous store calls: a hashed timer wheel of 1 ms ticks on one daemon
 * thread, in the manner of Netty's {@code HashedWheelTimer}, so that arming a deadline costs one
 * lock-free queue offer and cancelling it one field write, where a {@code ScheduledThreadPoolExecutor}
 * takes a lock and sifts a heap for both.
 *
 * <p>The timer thread only finds what expired; expired tasks run on a small completion pool, never
 * on the timer thread, so a storm of timeouts (and the callbacks of the futures they complete)
 * cannot delay the next tick. A task runs at or after its deadline, and, on a machine that
 * schedules the timer thread, within about one tick of it.
 *
 * <p>The same pool goes on handing a coalescing lane on when a store call finished as it was started
 * (a store that fails at once; {@code dev.sluice.spi.Coalescer}), so that neither a caller's thread
 * nor a client's I/O thread works through other callers' batches ({@link #execute}).
 *
 * <p>A cancelled entry keeps only its deadline until the wheel next passes its bucket (at most one
 * rotation, {@value #BUCKETS} ticks); it holds no reference to its task.
 */
public final class DeadlineTimer {
  /** The wheel's resolution. */
  public static final long TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
  private static final int BUCKETS = 1024; // a power of two: one rotation is about a second
  private static final int BATCH = 256; // expired tasks handed to the completion pool per job
  private static final System.Logger LOG = System.getLogger(DeadlineTimer.class.getName());

  /** Something to run when its deadline passes. */
  public interface Task {
    /** Called once, on a completion thread, at or after the deadline, unless cancelled. */
    void expire();
  }

  /** An armed deadline; {@link #cancel()} disarms it. */
  public static final class Timeout {
    final long deadlineNanos;
    volatile Task task;

    Timeout(Task task, long deadlineNanos) {
      this.task = task;
      this.deadlineNanos = deadlineNanos;
    }

    /** Disarms the deadline: its task will not run (unless it already started). */
    public void cancel() {
      task = null;
    }
  }

  private static final class Holder {
    static final DeadlineTimer INSTANCE = new DeadlineTimer();
  }

  /** The process-wide timer, started on first use. */
  public static DeadlineTimer shared() {
    return Holder.INSTANCE;
  }

  private final ConcurrentLinkedQueue<Timeout> arriving = new ConcurrentLinkedQueue<>();
  @SuppressWarnings("unchecked")
  private final ArrayList<Timeout>[] wheel = new ArrayList[BUCKETS];
  private final ForkJoinPool completions;
  private final Thread thread;
  private final long origin = System.nanoTime();
  private volatile boolean idle;
  private int armed; // entries in the wheel; timer thread only

  private DeadlineTimer() {
    for (int i = 0; i < BUCKETS; i++) {
      wheel[i] = new ArrayList<>();
    }
    completions = new ForkJoinPool(Math.max(2, Runtime.getRuntime().availableProcessors()), pool -> {
      ForkJoinWorkerThread t = ForkJoinPool.defaultForkJoinWorkerThreadFactory.newThread(pool);
      t.setName("sluice-deadline-completion-" + t.getPoolIndex());
      t.setDaemon(true);
      return t;
    }, null, true);
    thread = new Thread(this::loop, "sluice-deadline");
    thread.setDaemon(true);
    thread.start();
  }

  /** Arms {@code task} to run at {@code deadlineNanos} ({@link System#nanoTime()}). */
  public Timeout schedule(Task task, long deadlineNanos) {
    Timeout t = new Timeout(task, deadlineNanos);
    arriving.offer(t);
    if (idle) {
      LockSupport.unpark(thread);
    }
    return t;
  }

  /** Runs {@code task} on the completion pool, off the caller's thread. */
  public void execute(Runnable task) {
    completions.execute(task);
  }

  /** The tick that has begun at {@code nanos}. */
  private long tickOf(long nanos) {
    return Math.floorDiv(nanos - origin, TICK_NANOS);
  }

  /** The first tick that begins at or after {@code deadlineNanos}: when its bucket is visited, the deadline has passed. */
  private long dueTick(long deadlineNanos) {
    return Math.floorDiv(deadlineNanos - origin + TICK_NANOS - 1, TICK_NANOS);
  }

  private void loop() {
    long done = tickOf(System.nanoTime()); // the last tick whose bucket was processed
    ArrayList<Timeout> expired = new ArrayList<>();
    while (true) {
      if (armed == 0 && arriving.isEmpty()) {
        idle = true;
        if (arriving.isEmpty()) {
          LockSupport.park(this);
        }
        idle = false;
        done = tickOf(System.nanoTime()) - 1;
      } else {
        long wake = origin + (done + 1) * TICK_NANOS;
        for (long wait; (wait = wake - System.nanoTime()) > 0; ) {
          LockSupport.parkNanos(this, wait);
        }
      }
      long now = System.nanoTime();
      long current = tickOf(now);
      for (Timeout t; (t = arriving.poll()) != null; ) {
        if (t.task == null) {
          continue;
        }
        long due = dueTick(t.deadlineNanos);
        if (due <= current) {
          expired.add(t);
        } else {
          wheel[(int) (due & (BUCKETS - 1))].add(t);
          armed++;
        }
      }
      long from = Math.max(done + 1, current - BUCKETS + 1); // one rotation visits every bucket
      for (long tick = from; tick <= current; tick++) {
        sweep(wheel[(int) (tick & (BUCKETS - 1))], current, expired);
      }
      done = current;
      dispatch(expired);
    }
  }

  /** Moves what is due from {@code bucket} to {@code expired}, drops what was cancelled, keeps later rounds. */
  private void sweep(ArrayList<Timeout> bucket, long current, ArrayList<Timeout> expired) {
    int kept = 0;
    for (int i = 0, n = bucket.size(); i < n; i++) {
      Timeout t = bucket.get(i);
      if (t.task == null) {
        continue;
      }
      if (dueTick(t.deadlineNanos) <= current) {
        expired.add(t);
      } else {
        bucket.set(kept++, t);
      }
    }
    armed -= bucket.size() - kept;
    bucket.subList(kept, bucket.size()).clear();
  }

  private void dispatch(ArrayList<Timeout> expired) {
    for (int from = 0; from < expired.size(); from += BATCH) {
      Timeout[] batch = expired.subList(from, Math.min(expired.size(), from + BATCH)).toArray(new Timeout[0]);
      completions.execute(() -> {
        for (Timeout t : batch) {
          Task task = t.task;
          if (task != null) {
            t.task = null;
            try {
              task.expire();
            } catch (RuntimeException | Error e) { // a task's own bug must not drop the rest of the batch
              LOG.log(System.Logger.Level.WARNING, "a deadline task threw", e);
            }
          }
        }
      });
    }
    expired.clear();
  }
}
