package dev.sluice.spi;

import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.internal.DeadlineTimer;
import dev.sluice.spi.Backend.Step;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;

/**
 * Request coalescing for a {@link StoreRateLimiter} whose backend decides batches: acquires
 * for one budget (and scope: {@link LaneId}) that arrive while a store call for it is in flight wait
 * in its lane ({@link Lanes}),
 * then leave together as one batch, decided by one {@link Backend#stepBatch} in
 * arrival order at one instant. This class assembles the batches (dropping requests whose deadline
 * passed while they queued), dispatches them (on the oldest waiting caller's thread, or without a
 * thread on a backend that {@link Capabilities#asyncSteps steps asynchronously}) and
 * withdraws a request at its deadline; the pipeline maps each request's share to its decision.
 *
 * <p>Whatever a batch's call does, every request in it is answered and the lane handed on: a
 * request that throws as it is told its result (an {@link Error} from a fallback limiter, say) is
 * logged and keeps no other from being told, and a lane is handed on without recursion
 * ({@link #handOn}), so no number of calls failing at once can leave it busy.
 *
 * @param <P> the backend's compiled policy
 */
final class Coalescer<P> {
  private static final long PARK_SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
  private static final System.Logger LOG = System.getLogger(Coalescer.class.getName());

  /**
   * What the requests of one lane, and so of every batch, share: the policy (its name and numbers:
   * one plan), the key, and the backend's {@link Backend#batchScope scope} of the
   * request (null when it has none), read on the request's own thread as it enters.
   */
  record LaneId(Policy policy, String scope, String key) { }

  private final StoreRateLimiter owner;
  private final Lanes lanes;

  Coalescer(StoreRateLimiter owner, int maxBatch) {
    this.owner = owner;
    this.lanes = new Lanes(maxBatch);
  }

  /**
   * The lane an acquire of {@code p} and {@code key} joins, its scope read now, on the caller's
   * thread. Null when the scope cannot be read (the backend threw, say for an invalid tenant): the
   * request is then not coalesced, and its own step meets the same trouble and answers as it does
   * without coalescing (a programmer error thrown, a store failure decided by the failure mode).
   */
  LaneId lane(P plan, Policy p, String key) {
    String scope;
    try {
      scope = owner.batchScope(plan);
    } catch (RuntimeException e) {
      return null;
    }
    return new LaneId(p, scope, key);
  }

  /** Joins lane {@code id}: the lane when {@code w} leads, null when it was queued ({@link Lanes#enter}). */
  Lanes.Lane enter(LaneId id, Lanes.Waiter w) {
    return lanes.enter(id, w);
  }

  /** Withdraws {@code w} at its deadline: true when it will never reach the store ({@link Lanes#withdraw}). */
  boolean withdraw(Lanes.Waiter w) {
    return lanes.withdraw(w);
  }

  /** Lanes with a call in flight or being handed on (for tests: zero proves every lane free). */
  int busyLanes() {
    return lanes.busy();
  }

  /** A synchronous acquire: leads when nothing is in flight for its budget, else waits its turn. */
  Decision acquire(P plan, LaneId id, long permits, long now) {
    Policy p = id.policy();
    String key = id.key();
    SyncWaiter w = new SyncWaiter(permits, now, owner.nanoTime() + owner.timeoutNanos());
    Lanes.Lane lane = enter(id, w);
    if (lane != null) {
      try {
        return owner.decide(plan, p, Step.ACQUIRE, key, permits, now);
      } finally {
        handOff(plan, id, lane);
      }
    }
    boolean interrupted = false;
    try {
      while (!w.finished) {
        Lanes.Waiter[] batch = w.toRun;
        if (batch != null) {
          w.toRun = null;
          runBatch(plan, id, batch); // completes w too
          continue;
        }
        long left = w.deadline - owner.nanoTime();
        if (left <= 0 && (lanes.withdraw(w) || owner.stepsAsync())) {
          // Withdrawn: it never reaches the store. Else its batch is in flight and may count, as any
          // call past its deadline may. (Without an async store its batch runs on a thread whose
          // deadline is earlier, so it waits for that.)
          TimeoutException te = new TimeoutException("store call deadline of " + Duration.ofNanos(owner.timeoutNanos()) + " passed");
          return owner.failed(p, Step.ACQUIRE, key, permits, Reason.TIMEOUT, te, now);
        }
        LockSupport.parkNanos(owner, Math.max(1_000_000L, Math.min(left, PARK_SLICE_NANOS)));
        interrupted |= Thread.interrupted(); // restored on return; parking goes on until the deadline
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
    return w.error == null ? owner.toDecision(w.result, p, Step.ACQUIRE, key, permits, now)
        : owner.failed(p, Step.ACQUIRE, key, permits, owner.classify(w.error), w.error, now);
  }

  /** After a call of {@code lane} finished: the next batch goes to the store, or the lane goes idle. */
  void handOff(P plan, LaneId id, Lanes.Lane lane) {
    if (lanes.finished(lane)) {
      handOn(plan, id, lane);
    }
    // else the thread that started this call has not returned from starting it: it goes on, not this one
  }

  /**
   * Starts {@code lane}'s next batch; this thread is the one handing the lane on. A loop, never a
   * recursion: when the call it started had already finished as its start returned (a store that
   * fails at once, as Redis does while disconnected, runs the call's completion inline, here), that
   * completion did not hand the lane on, and the next batch is started from the completion pool
   * ({@link DeadlineTimer#execute}). So a thread that hands a lane on (a caller's, or a client's I/O
   * thread) starts one batch, and never works through the batches of callers who keep arriving
   * while the store fails; the cost is one hop to the pool per batch while it does.
   */
  private void handOn(P plan, LaneId id, Lanes.Lane lane) {
    while (true) {
      Lanes.Waiter[] batch;
      do {
        batch = unexpired(lanes.next(lane));
      } while (batch != null && batch.length == 0);
      if (batch == null) {
        return; // idle: the lane is removed
      }
      if (owner.stepsAsync()) {
        runBatchAsync(plan, id, batch);
      } else {
        batch[0].run(batch); // the oldest waiting caller runs it on its thread: this one returns now
      }
      if (!lanes.started(lane)) {
        return; // in flight: its completion hands the lane on
      }
      try {
        DeadlineTimer.shared().execute(() -> handOn(plan, id, lane));
        return;
      } catch (RejectedExecutionException e) {
        // no pool to go on from: go on here
      }
    }
  }

  /**
   * {@code batch} without the requests whose deadline passed while they queued: those are told
   * {@link Reason#TIMEOUT} and never reach the store.
   */
  private Lanes.Waiter[] unexpired(Lanes.Waiter[] batch) {
    if (batch == null) {
      return null;
    }
    long t = owner.nanoTime();
    int live = 0;
    for (Lanes.Waiter w : batch) {
      if (w.deadline - t > 0) {
        batch[live++] = w;
      } else {
        tell(w, null, new TimeoutException("the deadline passed while waiting behind a store call for the same key"));
      }
    }
    return live == batch.length ? batch : Arrays.copyOf(batch, live);
  }

  /** The instant a batch is decided at: its latest reading (or the store's clock). */
  private static long batchNow(Lanes.Waiter[] batch) {
    long now = Backend.STORE_CLOCK;
    for (Lanes.Waiter w : batch) {
      now = Math.max(now, w.now);
    }
    return now;
  }

  private static long[] permitsOf(Lanes.Waiter[] batch) {
    long[] permits = new long[batch.length];
    for (int i = 0; i < batch.length; i++) {
      permits[i] = batch[i].permits;
    }
    return permits;
  }

  /**
   * Runs {@code batch} on this thread, its oldest waiter's, by that waiter's deadline (the earliest:
   * a later waiter whose share the store did not decide in time is told {@link Reason#TIMEOUT}
   * early rather than holding this thread past its own deadline), then hands the lane on.
   */
  private void runBatch(P plan, LaneId id, Lanes.Waiter[] batch) {
    long start = owner.nanoTime();
    StepResult[] rs = null;
    Throwable error = null;
    try {
      rs = owner.stepBatch(plan, id.scope(), id.key(), permitsOf(batch), batchNow(batch), batch[0].deadline);
    } catch (Exception e) {
      error = StoreRateLimiter.caught(e);
    } catch (Error e) {
      error = e; // answered as a failure of the call, as every request in the batch shares it
    }
    finish(plan, id, batch, start, rs, error);
  }

  /**
   * Runs {@code batch} without holding a thread, cancelled at its youngest request's deadline; each
   * request times out at its own deadline meanwhile.
   */
  private void runBatchAsync(P plan, LaneId id, Lanes.Waiter[] batch) {
    long start = owner.nanoTime();
    long deadline = batch[batch.length - 1].deadline;
    CompletableFuture<StepResult[]> f;
    try {
      f = owner.stepBatchAsync(plan, id.scope(), id.key(), permitsOf(batch), batchNow(batch), deadline);
    } catch (RuntimeException | Error e) {
      f = CompletableFuture.failedFuture(e);
    }
    CompletableFuture<StepResult[]> call = f;
    DeadlineTimer.Timeout timer = DeadlineTimer.shared().schedule(() -> call.cancel(false),
        System.nanoTime() + Math.max(0, deadline - owner.nanoTime()));
    call.whenComplete((rs, e) -> {
      timer.cancel();
      Throwable error = e == null ? null : e instanceof CancellationException
          ? new TimeoutException("store call deadline passed") : StoreRateLimiter.unwrap(e);
      finish(plan, id, batch, start, rs, error);
    });
  }

  /**
   * {@code batch}'s call (begun at {@code start}) finished: reported, every request told, and the
   * lane handed on, whatever throws on the way. (A throwable escaping a future's callback is kept in
   * a future nobody reads: the lane must not depend on the callback running to its end.)
   */
  private void finish(P plan, LaneId id, Lanes.Waiter[] batch, long start, StepResult[] rs, Throwable error) {
    try {
      owner.reportStoreCall(id.policy(), start, error);
      complete(batch, rs, error);
    } catch (Throwable t) {
      complete(batch, null, t); // only the report can throw here: no request was told yet
    } finally {
      handOff(plan, id, batch[0].lane);
    }
  }

  /** Tells every request of {@code batch} its result, or {@code error}; never throws. */
  private static void complete(Lanes.Waiter[] batch, StepResult[] rs, Throwable error) {
    if (error == null && (rs == null || rs.length != batch.length)) {
      error = new StoreException("a batch of " + batch.length + " got " + (rs == null ? "no" : rs.length) + " results");
    }
    for (int i = 0; i < batch.length; i++) {
      tell(batch[i], error == null ? rs[i] : null, error);
    }
  }

  /** Tells {@code w} its result; what it throws as it is told is logged, and keeps no other request from being told. */
  private static void tell(Lanes.Waiter w, StepResult r, Throwable error) {
    try {
      w.done(r, error);
    } catch (Throwable t) {
      LOG.log(System.Logger.Level.WARNING, "a coalesced request threw as it was told its result; the rest of its batch"
          + " is told and its lane goes on", t);
    }
  }

  /** A synchronous acquire waiting in a lane: woken with its result, or with a batch to run. */
  private static final class SyncWaiter extends Lanes.Waiter {
    private final Thread thread = Thread.currentThread();
    volatile boolean finished;
    volatile StepResult result;
    volatile Throwable error;
    volatile Lanes.Waiter[] toRun;

    SyncWaiter(long permits, long now, long deadline) {
      super(permits, now, deadline);
    }

    @Override void done(StepResult r, Throwable e) {
      result = r;
      error = e;
      finished = true;
      LockSupport.unpark(thread);
    }

    @Override void run(Lanes.Waiter[] batch) {
      toRun = batch;
      LockSupport.unpark(thread);
    }
  }
}
