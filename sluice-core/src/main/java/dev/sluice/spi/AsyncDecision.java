package dev.sluice.spi;

import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.internal.DeadlineTimer;
import dev.sluice.spi.Backend.Step;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BiConsumer;

/**
 * One asynchronous decision: the backend's step racing a deadline timer. Whichever settles first
 * decides; no thread waits. The losing side only cancels. Part of the
 * {@link StoreRateLimiter} pipeline (its {@code tryAcquireAsync}), which maps the result.
 *
 * @param <P> the backend's compiled policy
 */
final class AsyncDecision<P> extends CompletableFuture<Decision> implements DeadlineTimer.Task, BiConsumer<StepResult, Throwable> {
  private final StoreRateLimiter owner;
  private final Coalescer<P> coalescer; // null: coalescing off
  private final P plan;
  private final Policy p;
  private final String key;
  private final long permits;
  private final long now;
  private final AtomicBoolean settled = new AtomicBoolean();
  private final long start;
  private volatile DeadlineTimer.Timeout timer;
  private volatile CompletableFuture<StepResult> inflight;
  private Coalescer.LaneId laneId; // set when it is coalesced
  private Lanes.Lane lane; // set when this decision leads a lane
  private volatile Lanes.Waiter queued; // set when it waits in one

  AsyncDecision(StoreRateLimiter owner, Coalescer<P> coalescer, P plan, Policy p, String key, long permits, long now) {
    this.owner = owner;
    this.coalescer = coalescer;
    this.start = owner.nanoTime();
    this.plan = plan;
    this.p = p;
    this.key = key;
    this.permits = permits;
    this.now = now;
  }

  /** Starts the decision: in lane {@code id} when there is one, else (null) with a store call of its own. */
  AsyncDecision<P> start(Coalescer.LaneId id) {
    timer = DeadlineTimer.shared().schedule(this, System.nanoTime() + owner.timeoutNanos());
    if (id != null) {
      laneId = id;
      Lanes.Waiter w = new Lanes.Waiter(permits, now, start + owner.timeoutNanos()) {
        @Override void done(StepResult r, Throwable error) {
          settle(r, error, false);
        }
      };
      queued = w;
      lane = coalescer.enter(id, w);
      if (lane == null) {
        return this; // a batch will decide it
      }
      queued = null;
    }
    CompletableFuture<StepResult> f;
    try {
      f = owner.stepAsync(plan, Step.ACQUIRE, key, permits, null, now, start + owner.timeoutNanos());
    } catch (IllegalArgumentException | Error e) {
      timer.cancel();
      if (lane != null) {
        coalescer.handOff(plan, laneId, lane);
      }
      throw e; // a programmer error (or the VM's), thrown at once as from the sync path, the lane handed on
    } catch (RuntimeException e) {
      accept(null, e); // a backend closing under us: a failure decision, never a throw
      return this;
    }
    inflight = f;
    f.whenComplete(this);
    return this;
  }

  /** Its own store call finished (or was cancelled at the deadline): decide, then hand the lane on. */
  @Override public void accept(StepResult r, Throwable e) {
    try {
      settle(r, e, true);
    } finally {
      if (lane != null) {
        coalescer.handOff(plan, laneId, lane);
      }
    }
  }

  /** Decides from its own store call ({@code ownCall}) or from the batch it went in (reported once, for the batch). */
  void settle(StepResult r, Throwable e, boolean ownCall) {
    if (!settled.compareAndSet(false, true)) {
      return;
    }
    DeadlineTimer.Timeout t = timer;
    if (t != null) {
      t.cancel();
    }
    Throwable error = e == null ? null : StoreRateLimiter.unwrap(e);
    if (ownCall) {
      owner.reportStoreCall(p, start, error);
    }
    Decision d;
    try {
      d = r != null ? owner.toDecision(r, p, Step.ACQUIRE, key, permits, now)
          : owner.failed(p, Step.ACQUIRE, key, permits, owner.classify(error), error, now);
    } catch (Throwable thrown) {
      // The mapping or the failure mode (its fallback limiter) threw: the caller gets it, as a
      // synchronous caller would, and is not left waiting (its deadline timer is cancelled).
      completeExceptionally(thrown);
      return;
    }
    complete(owner.finish(d, key));
  }

  /** The deadline passed first. */
  @Override public void expire() {
    if (!settled.compareAndSet(false, true)) {
      return;
    }
    Lanes.Waiter w = queued;
    if (w != null) {
      coalescer.withdraw(w); // still queued: it never reaches the store; already in a batch: its result is dropped
    }
    CompletableFuture<StepResult> f = inflight;
    if (f != null) {
      f.cancel(false);
    }
    TimeoutException te = new TimeoutException("store call deadline of " + Duration.ofNanos(owner.timeoutNanos()) + " passed");
    if (w == null) { // a request that waited in a lane made no call of its own
      owner.reportStoreCall(p, start, te);
    }
    complete(owner.finish(owner.failed(p, Step.ACQUIRE, key, permits, Reason.TIMEOUT, te, now), key));
  }
}
