package dev.sluice.jdbc.internal;

import dev.sluice.spi.StoreNotReachedException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * How every JDBC call of this module keeps its caller's deadline, for both backends
 * ({@code JdbcRateLimiter} and {@code JdbcVersionedStore}): the JDBC work of one call runs on a
 * worker thread, and its caller waits for it at most until the deadline.
 *
 * <p>Why a worker: JDBC blocks, and none of its own timeouts is the caller's deadline. A pool's
 * connection timeout counts from the borrow, not from the call (HikariCP's least is 250 ms, so a call
 * with 20 ms left could wait 250 ms for a connection: the versioned-store engine did, issue 26); a
 * network timeout bounds each read of the socket, not the call; a query timeout is in whole seconds.
 * So the caller stops waiting at its deadline whatever the worker is doing, and the worker's own
 * timeouts only free the worker.
 *
 * <p>What a caller is told stays true: work whose deadline passed while it waited for a worker never
 * starts ({@link StoreNotReachedException} caused by a {@link TimeoutException}: nothing was sent),
 * and a caller that stops waiting cancels the task, so work not yet started never runs. Work already
 * running when the caller stopped waiting may still reach the store: the caller gets the
 * {@link TimeoutException} of an unknown outcome, never a "not reached".
 *
 * <p>Not API: this package is not exported.
 *
 * @param <T> what the work returns
 */
public final class DeadlineTask<T> extends CompletableFuture<T> implements Runnable {
  /** Threads of {@link #workers}: size it like the connection pool. */
  public static final int WORKERS = 16;
  /** Tasks {@link #workers} queues before it refuses one. */
  public static final int QUEUE = 4_096;

  /** The JDBC work of one call, run on a worker. */
  @FunctionalInterface
  public interface Work<T> {
    T run() throws Exception;
  }

  private static final Runnable NOTHING = () -> { };

  private final long deadline;
  private final Runnable onCancel;
  private final Work<T> work;

  private DeadlineTask(long deadline, Runnable onCancel, Work<T> work) {
    this.deadline = deadline;
    this.onCancel = onCancel;
    this.work = work;
  }

  /**
   * Queues {@code work} on {@code executor} for a caller answered by {@code deadline}
   * ({@link System#nanoTime()}); wait for it with {@link #await()}, or cancel it at the deadline.
   *
   * @throws StoreNotReachedException when the executor refuses it (nothing was sent)
   */
  public static <T> DeadlineTask<T> submit(Executor executor, long deadline, Work<T> work) {
    return submit(executor, deadline, NOTHING, work);
  }

  /**
   * As {@link #submit(Executor, long, Work)}, and {@code onCancel} runs when the caller stops waiting
   * (it abandons a wait the running work is in: the JDBC limiter's wait for a pooled connection,
   * {@code ConnectionWait}, so that a worker never waits in the pool, nor takes a connection, for a
   * caller who is gone).
   */
  public static <T> DeadlineTask<T> submit(Executor executor, long deadline, Runnable onCancel, Work<T> work) {
    DeadlineTask<T> task = new DeadlineTask<>(deadline, onCancel, work);
    try {
      executor.execute(task);
    } catch (RejectedExecutionException e) {
      throw new StoreNotReachedException("the executor refused the JDBC work", e);
    }
    return task;
  }

  @Override public void run() {
    if (isDone()) {
      return; // its caller stopped waiting while it queued
    }
    if (System.nanoTime() - deadline >= 0) {
      // The caller's deadline passed while the work waited for a worker: do not touch the store.
      // A TIMEOUT, not STORE_UNAVAILABLE: on a machine short of CPU this can answer the caller
      // before its own wait ends (issue 26, finding 7).
      completeExceptionally(new CompletionException(new StoreNotReachedException("the deadline passed before the JDBC work started",
          new TimeoutException("the deadline passed while the JDBC work waited for a worker"))));
      return;
    }
    try {
      complete(work.run());
    } catch (Throwable e) {
      completeExceptionally(e instanceof CompletionException ? e : new CompletionException(e));
    }
  }

  @Override public boolean cancel(boolean mayInterruptIfRunning) {
    onCancel.run();
    return super.cancel(mayInterruptIfRunning);
  }

  /**
   * Waits for the work until the deadline, on the caller's thread. When the deadline passes (a
   * {@link TimeoutException}) or the caller is interrupted, the task is cancelled first: work not yet
   * started never runs. A failure of the work is thrown as it was thrown.
   */
  public T await() throws Exception {
    try {
      return get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
    } catch (TimeoutException | InterruptedException e) {
      cancel(false);
      throw e;
    } catch (ExecutionException e) {
      throw cause(e);
    }
  }

  /** The failure a completion or execution exception carries. */
  public static Exception cause(Throwable e) {
    while ((e instanceof CompletionException || e instanceof ExecutionException) && e.getCause() != null) {
      e = e.getCause();
    }
    return e instanceof Exception ex ? ex : new CompletionException(e);
  }

  /**
   * The default workers of a backend: {@value #WORKERS} daemon threads named {@code name-N} that stop
   * after 30 s idle, and a queue of {@value #QUEUE} tasks. The owner shuts it down when it is closed.
   */
  public static ExecutorService workers(String name) {
    AtomicInteger n = new AtomicInteger();
    ThreadPoolExecutor e = new ThreadPoolExecutor(WORKERS, WORKERS, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(QUEUE), r -> {
      Thread t = new Thread(r, name + "-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
    e.allowCoreThreadTimeOut(true);
    return e;
  }
}
