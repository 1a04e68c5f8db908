package dev.sluice.spi;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Ticket;
import dev.sluice.memory.MemoryRateLimiter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntSupplier;
import org.junit.jupiter.api.Test;

/**
 * Issue 26, finding 1: a hot key's coalescing lane locked up for good after a connection loss. While
 * the store was unreachable, {@code stepBatchAsync} answered with an already-failed future, so each
 * batch's completion ran inline and handed the lane on by calling itself again, until a
 * {@link StackOverflowError} thrown inside the completion was swallowed by the future and the lane
 * stayed busy: every later decision on that key timed out (or, failing open, never reached the
 * store), while other keys recovered. These tests drive the lane with a store that fails at once,
 * deterministically, and prove the lane free afterwards.
 */
class CoalescerLaneWedgeTest {
  private static final Policy POLICY = Policy.fixedWindow("wedge", 1_000_000, Duration.ofMinutes(10));
  /** Long enough that no waiter times out: a waiter that is not answered at once is wedged, not late. */
  private static final Duration PATIENT = Duration.ofMinutes(1);

  /**
   * A backend whose store answers at once: decided when up, an already-failed future (nothing sent,
   * as Redis while disconnected) when down. A leader's call can be held in flight with {@link #hold}.
   */
  static final class InstantStore implements Backend<Policy> {
    private static final Capabilities CAPABILITIES = Capabilities.fixedSize("an instant store").withBatches().withAsyncSteps();
    volatile boolean down;
    StoreRateLimiter limiter;
    private final AtomicReference<CompletableFuture<StepResult>> held = new AtomicReference<>();
    final AtomicInteger batchCalls = new AtomicInteger();
    final AtomicInteger reachedWhileUp = new AtomicInteger();
    /** The thread each batch call was started on. */
    final ConcurrentLinkedQueue<Thread> batchThreads = new ConcurrentLinkedQueue<>();

    static Builder builder() {
      return new Builder();
    }

    static final class Builder extends StoreRateLimiter.Settings<Builder> {
      Builder() {
        super(POLICY, PATIENT);
      }

      @Override public Builder self() {
        return this;
      }

      InstantStore build() {
        InstantStore store = new InstantStore();
        store.limiter = pipeline(store);
        return store;
      }
    }

    /** The next single acquire's call stays in flight until the returned future is completed. */
    CompletableFuture<StepResult> hold() {
      CompletableFuture<StepResult> f = new CompletableFuture<>();
      held.set(f);
      return f;
    }

    private StepResult decided() {
      reachedWhileUp.incrementAndGet();
      return StepResult.decided(true, 1, 1, 0, 1, true);
    }

    Decision tryAcquire(String key) {
      return limiter.tryAcquire(key);
    }

    CompletionStage<Decision> tryAcquireAsync(String key, long permits) {
      return limiter.tryAcquireAsync(key, permits);
    }

    int busyLanes() {
      return limiter.busyLanes();
    }

    @Override public Capabilities capabilities() {
      return CAPABILITIES;
    }

    @Override public Policy compile(Policy policy) {
      return policy;
    }

    @Override public StepResult step(Policy p, Step step, String key, long permits, Ticket ticket, long now, long deadline) {
      if (down) {
        throw new StoreNotReachedException("store down");
      }
      return decided();
    }

    @Override public CompletableFuture<StepResult> stepAsync(Policy p, Step step, String key, long permits, Ticket ticket,
                                                                long now, long deadline) {
      CompletableFuture<StepResult> f = held.getAndSet(null);
      if (f != null) {
        return f;
      }
      return down ? CompletableFuture.failedFuture(new StoreNotReachedException("store down"))
          : CompletableFuture.completedFuture(decided());
    }

    @Override public StepResult[] stepBatch(Policy p, String scope, String key, long[] permits, long now, long deadline) {
      throw new AssertionError("an asynchronous store sends batches asynchronously");
    }

    @Override public CompletableFuture<StepResult[]> stepBatchAsync(Policy p, String scope, String key, long[] permits,
                                                                       long now, long deadline) {
      batchCalls.incrementAndGet();
      batchThreads.add(Thread.currentThread());
      if (down) {
        return CompletableFuture.failedFuture(new StoreNotReachedException("store down"));
      }
      StepResult[] rs = new StepResult[permits.length];
      for (int i = 0; i < rs.length; i++) {
        rs[i] = decided();
      }
      return CompletableFuture.completedFuture(rs);
    }

    @Override public void delete(Policy p, String key, long deadline) {
    }
  }

  /** Runs {@code r} on a thread with a small stack, as an I/O thread deep in its own frames would be. */
  private static void onSmallStack(Runnable r) throws InterruptedException {
    AtomicReference<Throwable> thrown = new AtomicReference<>();
    Thread t = new Thread(null, () -> {
      try {
        r.run();
      } catch (Throwable e) {
        thrown.set(e);
      }
    }, "small-stack", 256 * 1024);
    t.start();
    t.join(TimeUnit.SECONDS.toMillis(30));
    assertThat(t.isAlive()).as("the completing thread returned").isFalse();
    assertThat(thrown.get()).as("thrown on the completing thread").isNull();
  }

  private static void awaitAll(List<CompletableFuture<Decision>> all) {
    CompletableFuture<Void> every = CompletableFuture.allOf(all.toArray(new CompletableFuture<?>[0]));
    try {
      every.get(10, TimeUnit.SECONDS);
    } catch (Exception e) {
      long open = all.stream().filter(f -> !f.isDone()).count();
      throw new AssertionError(open + " of " + all.size() + " decisions still unanswered 10 s after the store failed them"
          + " (timeout " + PATIENT + "): the lane is wedged", e);
    }
  }

  /**
   * Polls until no lane is busy: the last batch's requests are told inside its completion, before
   * the lane is handed on (from the completion pool when the call failed at once).
   */
  private static void awaitLanesFree(IntSupplier busyLanes) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (busyLanes.getAsInt() != 0) {
      assertThat(System.nanoTime()).as("a lane still busy 10 s after the fault: wedged").isLessThan(deadline);
      Thread.onSpinWait();
    }
  }

  private static void assertLaneFreeAndStoreReached(InstantStore store, String key) {
    awaitLanesFree(store::busyLanes);
    store.down = false;
    int before = store.reachedWhileUp.get();
    assertThat(store.tryAcquire(key).path()).as("a sync decision on " + key).isEqualTo(Path.PRIMARY);
    assertThat(store.tryAcquireAsync(key, 1).toCompletableFuture().join().path()).as("an async decision on " + key)
        .isEqualTo(Path.PRIMARY);
    assertThat(store.reachedWhileUp.get() - before).as("store calls for them").isEqualTo(2);
    assertThat(store.busyLanes()).isZero();
  }

  @Test void thousandsOfBatchesFailingInlineNeitherOverflowTheStackNorWedgeTheLane() throws Exception {
    InstantStore store = InstantStore.builder().timeout(PATIENT).maxBatch(2).build();
    CompletableFuture<StepResult> inFlight = store.hold();
    List<CompletableFuture<Decision>> all = new ArrayList<>();
    all.add(store.tryAcquireAsync("hot", 1).toCompletableFuture()); // leads the lane; its call stays in flight
    store.down = true;
    for (int i = 0; i < 20_000; i++) {
      all.add(store.tryAcquireAsync("hot", 1).toCompletableFuture()); // 10,000 batches of 2 queue behind it
    }
    assertThat(store.busyLanes()).isEqualTo(1);

    // The connection drops: the call in flight fails, and so does every batch after it, at once.
    onSmallStack(() -> inFlight.completeExceptionally(new StoreNotReachedException("connection lost")));

    awaitAll(all);
    assertThat(all).allSatisfy(f -> {
      Decision d = f.join();
      assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
      assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
    });
    assertThat(store.batchCalls.get()).as("batches sent").isEqualTo(10_000);
    assertLaneFreeAndStoreReached(store, "hot");
  }

  /**
   * Callers that ask again as soon as they are answered (an async loop) refill the lane from inside
   * each failed batch's completion. The thread that finished the call in flight starts one batch and
   * returns; the rest are handed on from the completion pool, so no caller's (or I/O) thread works
   * through other callers' batches for as long as they keep asking.
   */
  @Test void callersAskingAgainFromTheCompletionDoNotHoldTheCompletingThread() throws Exception {
    InstantStore store = InstantStore.builder().timeout(PATIENT).build();
    CompletableFuture<StepResult> inFlight = store.hold();
    CompletableFuture<Decision> leader = store.tryAcquireAsync("hot", 1).toCompletableFuture();
    store.down = true;
    int chains = 1_000;
    int rounds = 20;
    AtomicInteger answered = new AtomicInteger();
    AtomicInteger notUnavailable = new AtomicInteger();
    CompletableFuture<Void> finished = new CompletableFuture<>();
    for (int c = 0; c < chains; c++) {
      loop(store, rounds, answered, notUnavailable, finished, chains * rounds);
    }
    onSmallStack(() -> inFlight.completeExceptionally(new StoreNotReachedException("connection lost")));
    Thread completer = store.batchThreads.peek();

    finished.get(10, TimeUnit.SECONDS);
    assertThat(leader.join().reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
    assertThat(notUnavailable.get()).as("decisions other than STORE_UNAVAILABLE").isZero();
    assertThat(store.batchThreads.stream().filter(t -> t == completer).count())
        .as("batches started on the thread whose call failed").isEqualTo(1);
    assertLaneFreeAndStoreReached(store, "hot");
  }

  private static void loop(InstantStore store, int left, AtomicInteger answered, AtomicInteger notUnavailable,
                           CompletableFuture<Void> finished, int total) {
    store.tryAcquireAsync("hot", 1).whenComplete((d, e) -> {
      if (e != null || d.reason() != Reason.STORE_UNAVAILABLE) {
        notUnavailable.incrementAndGet();
      }
      if (answered.incrementAndGet() == total) {
        finished.complete(null);
      }
      if (left > 1) {
        loop(store, left - 1, answered, notUnavailable, finished, total);
      }
    });
  }

  /** A fallback limiter that throws an {@link Error} on its first {@code errors} decisions. */
  private static final class ThrowingFallback implements RateLimiter {
    private final RateLimiter local = MemoryRateLimiter.builder(POLICY).build();
    private final AtomicInteger errors;

    ThrowingFallback(int errors) {
      this.errors = new AtomicInteger(errors);
    }

    @Override public Policy policy() {
      return POLICY;
    }

    @Override public Decision tryAcquire(String key, long permits, Policy policy) {
      if (errors.getAndDecrement() > 0) {
        throw new StackOverflowError("injected into the fallback's decision");
      }
      return local.tryAcquire(key, permits, policy);
    }

    @Override public java.util.concurrent.CompletionStage<Decision> tryAcquireAsync(String key, long permits, Policy policy) {
      return CompletableFuture.completedFuture(tryAcquire(key, permits, policy));
    }

    @Override public Decision peek(String key, Policy policy) {
      return local.peek(key, policy);
    }

    @Override public Refund refund(Ticket ticket) {
      return local.refund(ticket);
    }

    @Override public void reset(String key, Policy policy) {
      local.reset(key, policy);
    }
  }

  /**
   * An {@link Error} thrown while a failed batch's waiters are decided (here by the fallback limiter
   * of the failure mode) used to end the completion there: the rest of the batch was never answered
   * and the lane never handed on. Every waiter is answered (the one whose decision threw, with that
   * error) and the lane is free.
   */
  @Test void anErrorThrownInABatchCompletionStillAnswersTheBatchAndFreesTheLane() throws Exception {
    InstantStore store = InstantStore.builder().timeout(PATIENT).failureMode(FailureMode.fallback(new ThrowingFallback(1))).build();
    CompletableFuture<StepResult> inFlight = store.hold();
    CompletableFuture<Decision> leader = store.tryAcquireAsync("hot", 1).toCompletableFuture();
    List<CompletableFuture<Decision>> queued = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      queued.add(store.tryAcquireAsync("hot", 1).toCompletableFuture());
    }
    store.down = true;
    inFlight.complete(StepResult.decided(true, 1, 1, 0, 1, true)); // the leader is answered; its batch fails

    assertThat(leader.join().path()).isEqualTo(Path.PRIMARY);
    CompletableFuture.allOf(queued.toArray(new CompletableFuture<?>[0])).handle((v, e) -> null).get(10, TimeUnit.SECONDS);
    assertThat(queued.get(0)).as("the waiter whose decision threw").isCompletedExceptionally();
    assertThat(queued.subList(1, queued.size())).allSatisfy(f -> assertThat(f.join().path()).isEqualTo(Path.FALLBACK));
    assertLaneFreeAndStoreReached(store, "hot");
  }

  /** The same with the waiter itself throwing as it is told its result: the rest are told and the lane is free. */
  @Test void aWaiterThatThrowsWhenToldItsResultStillFreesTheLane() throws Exception {
    InstantStore store = InstantStore.builder().timeout(PATIENT).build();
    Coalescer<Policy> coalescer = new Coalescer<>(store.limiter, StoreRateLimiter.MAX_BATCH);
    Coalescer.LaneId id = coalescer.lane(POLICY, POLICY, "hot");
    long deadline = System.nanoTime() + PATIENT.toNanos();
    Lanes.Lane lane = coalescer.enter(id, new Told(deadline, false));
    assertThat(lane).as("the first waiter leads").isNotNull();
    Told throwing = new Told(deadline, true);
    Told after = new Told(deadline, false);
    assertThat(coalescer.enter(id, throwing)).isNull();
    assertThat(coalescer.enter(id, after)).isNull();
    store.down = true;

    coalescer.handOff(POLICY, id, lane); // the leader's call finished: the batch goes, fails at once, is told

    assertThat(throwing.told.get()).isEqualTo(1);
    assertThat(after.told.get()).as("the waiter after the one that threw is told").isEqualTo(1);
    assertThat(after.error.get()).isInstanceOf(StoreNotReachedException.class);
    awaitLanesFree(coalescer::busyLanes);
    store.down = false;
    assertThat(coalescer.enter(id, new Told(deadline, false))).as("the next request leads the lane at once").isNotNull();
  }

  private static final class Told extends Lanes.Waiter {
    final AtomicInteger told = new AtomicInteger();
    final AtomicReference<Throwable> error = new AtomicReference<>();
    private final boolean throwsError;

    Told(long deadline, boolean throwsError) {
      super(1, Backend.STORE_CLOCK, deadline);
      this.throwsError = throwsError;
    }

    @Override void done(StepResult r, Throwable e) {
      told.incrementAndGet();
      error.set(e);
      if (throwsError) {
        throw new StackOverflowError("injected into a waiter");
      }
    }
  }
}
