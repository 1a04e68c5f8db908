package dev.sluice.hazelcast;

import com.hazelcast.client.HazelcastClientOfflineException;
import com.hazelcast.core.OperationTimeoutException;
import com.hazelcast.map.IMap;
import com.hazelcast.spi.exception.TargetNotMemberException;
import dev.sluice.Algorithm;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Ticket;
import dev.sluice.internal.ClockLag;
import dev.sluice.internal.ModelSteps;
import dev.sluice.internal.StoredId;
import dev.sluice.spi.Backend;
import dev.sluice.spi.Capabilities;
import dev.sluice.spi.StepResult;
import dev.sluice.spi.StoreException;
import dev.sluice.spi.StoreNotReachedException;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * Hazelcast as a {@link Backend}: every step is one entry processor ({@link BudgetStep}) submitted to
 * the partition owner of the budget's entry ({@link IMap#submitToKey}), one network hop, waited for
 * until the deadline (sync) or mapped without holding a thread (async); a coalesced batch is one
 * processor too.
 */
final class HazelcastBackend implements Backend<HazelcastBackend.Plan> {
  /** An entry holds a fixed-size state (no sliding log); every algorithm it runs is batched; submitToKey holds no thread. */
  static final Capabilities CAPABILITIES = Capabilities.fixedSize("Hazelcast").withBatches().withAsyncSteps();

  private static final StepResult LAGGING = StepResult.invalidClock("the supplied clock lags behind its own earlier readings "
      + "by more than expiryGrace: a state this limiter wrote may have expired on Hazelcast while the clock still counts it");

  /** A policy compiled: the policy, its algorithm's kind and numbers for the wire. */
  record Plan(Policy policy, int kind, long[] numbers) {}

  private final IMap<String, Object> map;
  private final long graceMillis;
  /** The lag rule of a supplied clock; null with the members' clocks. */
  private final ClockLag lag;
  private final String description;

  HazelcastBackend(IMap<String, Object> map, Duration expiryGrace, boolean supplied, long timeoutNanos, String description) {
    this.map = map;
    long grace = expiryGrace.toMillis();
    if (supplied) {
      // A processor runs at most the timeout after its reading was checked (a later reply is no answer):
      // the entry outlives its state by that too, so that the grace alone bounds the lag (ClockLag).
      this.lag = new ClockLag(grace * 1_000);
      grace += (timeoutNanos + 999_999) / 1_000_000;
    } else {
      this.lag = null;
    }
    this.graceMillis = grace;
    this.description = description;
  }

  @Override public Capabilities capabilities() {
    return CAPABILITIES;
  }

  @Override public Plan compile(Policy policy) {
    Algorithm a = policy.algorithm();
    return new Plan(policy, Wire.kind(a), Wire.numbers(a));
  }

  @Override public StepResult step(Plan p, Step step, String key, long permits, Ticket ticket, long now, long deadline)
      throws Exception {
    if (lags(p, now, step != Step.PEEK)) {
      return LAGGING;
    }
    return result(p.policy, await(submit(p, key, processor(p, step, permits, ticket, now)), deadline), 1)[0];
  }

  @Override public CompletableFuture<StepResult> stepAsync(Plan p, Step step, String key, long permits, Ticket ticket,
                                                           long now, long deadline) {
    if (lags(p, now, step != Step.PEEK)) {
      return CompletableFuture.completedFuture(LAGGING);
    }
    return mapped(p, key, processor(p, step, permits, ticket, now), r -> result(p.policy, r, 1)[0]);
  }

  @Override public StepResult[] stepBatch(Plan p, String scope, String key, long[] permits, long now, long deadline)
      throws Exception {
    if (lags(p, now, true)) {
      return lagging(permits.length);
    }
    return result(p.policy, await(submit(p, key, batch(p, permits, now)), deadline), permits.length);
  }

  @Override public CompletableFuture<StepResult[]> stepBatchAsync(Plan p, String scope, String key, long[] permits, long now,
                                                                  long deadline) {
    if (lags(p, now, true)) {
      return CompletableFuture.completedFuture(lagging(permits.length));
    }
    return mapped(p, key, batch(p, permits, now), r -> result(p.policy, r, permits.length));
  }

  /** Forgets the budget's count: removes its entry (its spent tickets with it), or keeps only its override. */
  @Override public void delete(Plan p, String key, long deadline) throws Exception {
    await(submit(p, key, new BudgetStep(BudgetStep.RESET, p.kind, p.numbers, 0, 0, null, 0, 0, 0, 0, graceMillis)), deadline);
  }

  /** Hazelcast's own operation timeout is a timeout too; everything else is the store being unavailable. */
  @Override public Reason classify(Throwable e) {
    return e instanceof OperationTimeoutException ? Reason.TIMEOUT : Backend.super.classify(e);
  }

  @Override public String describe() {
    return description;
  }

  private BudgetStep processor(Plan p, Step step, long permits, Ticket ticket, long now) {
    byte op = switch (step) {
      case ACQUIRE -> BudgetStep.ACQUIRE;
      case PEEK -> BudgetStep.PEEK;
      case REFUND -> BudgetStep.REFUND;
      case OVERRUN -> BudgetStep.OVERRUN;
    };
    if (ticket == null) {
      return new BudgetStep(op, p.kind, p.numbers, now, permits, null, 0, 0, 0, 0, graceMillis);
    }
    String id = ticket.id();
    return new BudgetStep(op, p.kind, p.numbers, now, permits, null, ticket.stamp(), Long.parseUnsignedLong(id, 0, 16, 16),
        Long.parseUnsignedLong(id, 16, 32, 16), ModelSteps.ticketExpiresAt(ticket), graceMillis);
  }

  private BudgetStep batch(Plan p, long[] permits, long now) {
    return new BudgetStep(BudgetStep.BATCH, p.kind, p.numbers, now, 0, permits, 0, 0, 0, 0, graceMillis);
  }

  /** The processor sent to the entry's owner; a call that throws before it is sent was certainly not sent. */
  private CompletableFuture<long[]> submit(Plan p, String key, BudgetStep step) throws StoreNotReachedException {
    try {
      return map.submitToKey(StoredId.key(p.policy.name(), key), step).toCompletableFuture();
    } catch (IllegalArgumentException e) {
      throw e;
    } catch (RuntimeException e) {
      throw notSent(e);
    }
  }

  /** {@code step}'s reply mapped by {@code f}, holding no thread; cancelling the result cancels the invocation's future. */
  private <T> CompletableFuture<T> mapped(Plan p, String key, BudgetStep step, Function<long[], T> f) {
    CompletableFuture<long[]> reply;
    try {
      reply = submit(p, key, step);
    } catch (StoreNotReachedException e) {
      return CompletableFuture.failedFuture(e);
    }
    CompletableFuture<T> out = reply.handle((r, e) -> {
      if (e != null) {
        Throwable cause = unwrap(e);
        throw new CompletionException(certainlyNotSent(cause) ? new StoreNotReachedException(cause.toString(), cause) : cause);
      }
      return f.apply(r);
    });
    out.whenComplete((r, x) -> {
      if (out.isCancelled()) {
        reply.cancel(false);
      }
    });
    return out;
  }

  /**
   * Whether a supplied reading lags as {@link ClockLag} refuses: a state this limiter wrote may have
   * expired on a member's clock while this reading still counts it.
   */
  private boolean lags(Plan p, long now, boolean writes) {
    return lag != null && !lag.admits(p.policy.algorithm(), now, System.nanoTime() / 1_000, writes);
  }

  private static StepResult[] lagging(int n) {
    StepResult[] rs = new StepResult[n];
    Arrays.fill(rs, LAGGING);
    return rs;
  }

  /**
   * The reply by {@code deadline}; past it the future is cancelled (an invocation already sent may
   * still run: its outcome is unknown). A failure Hazelcast reports before anything was sent is a
   * {@link StoreNotReachedException}.
   */
  private static <T> T await(CompletableFuture<T> f, long deadline) throws Exception {
    long left = deadline - System.nanoTime();
    try {
      if (left <= 0) {
        throw new TimeoutException("Hazelcast call deadline passed");
      }
      return f.get(left, TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      f.cancel(false);
      throw e;
    } catch (ExecutionException e) {
      Throwable cause = unwrap(e);
      if (certainlyNotSent(cause)) {
        throw new StoreNotReachedException(cause.toString(), cause);
      }
      throw cause instanceof Exception x ? x : e;
    }
  }

  /**
   * The failures of a sent invocation after which Hazelcast certainly did not run the processor: a
   * client with no connection (its reconnect mode ASYNC) and a target that is not a member, both
   * raised before anything goes out. Any other failure (a member that left with the invocation in
   * flight, a lost connection, an operation timeout, an instance shut down while the invocation was
   * pending) may have run it. (A failure thrown by {@code submitToKey} itself, such as a shut-down
   * instance's, is never sent: see {@link #submit}.)
   */
  static boolean certainlyNotSent(Throwable e) {
    return e instanceof HazelcastClientOfflineException || e instanceof TargetNotMemberException;
  }

  private static StoreNotReachedException notSent(RuntimeException e) {
    return new StoreNotReachedException("Hazelcast did not send the call: " + e, e);
  }

  /** The reply's seven fields per request as step results; a reply of seven for a batch of more is one failure for all. */
  static StepResult[] result(Policy asked, long[] r, int n) {
    StepResult[] rs = new StepResult[n];
    int fields = BudgetStep.FIELDS * n;
    boolean overridden = r != null && r.length == fields + OVERRIDE_WORDS;
    if (r == null || r.length != fields && r.length != BudgetStep.FIELDS && !overridden) {
      throw new StoreException("unexpected entry processor reply " + Arrays.toString(r) + " to " + n + " request(s)");
    }
    if (r.length == BudgetStep.FIELDS && n > 1) {
      Arrays.fill(rs, one(r, 0));
      return rs;
    }
    // The key's override decided: the reply ends with it, and the results say so.
    Policy by = overridden ? overridden(asked, r, fields) : asked;
    for (int i = 0; i < n; i++) {
      StepResult one = one(r, BudgetStep.FIELDS * i);
      rs[i] = by == asked || one.failure() != null ? one : one.decidedBy(by);
    }
    return rs;
  }

  /** Words of an override in a reply: its kind and three numbers. */
  private static final int OVERRIDE_WORDS = 4;

  /** The policy the override at {@code at} of a reply stands for under {@code asked}'s name ({@code asked} when it is its algorithm). */
  static Policy overridden(Policy asked, long[] r, int at) {
    Algorithm a = Wire.algorithm((int) r[at], r[at + 1], r[at + 2], r[at + 3]);
    return a.equals(asked.algorithm()) ? asked : new Policy(asked.name(), a);
  }

  /**
   * Sets ({@code override} non-null), clears or reads ({@code op} {@link BudgetStep#GET_OVERRIDE})
   * {@code key}'s override under {@code asked.name()} with one entry processor, at {@code now} (the
   * supplied clock's reading; 0: the member's clock, as decisions); its reply.
   */
  long[] override(byte op, Policy asked, String key, Policy override, long now, long deadline) throws Exception {
    Plan p = compile(override != null ? override : asked);
    BudgetStep step = new BudgetStep(op, p.kind(), p.numbers(), now, 0, null, 0, 0, 0, 0, graceMillis);
    return await(submit(compile(asked), key, step), deadline);
  }

  private static StepResult one(long[] r, int at) {
    if (r[at] == BudgetStep.CORRUPT) {
      return StepResult.corrupt("the entry is not a state Sluice wrote, or lies further ahead of the clock than its policy "
          + "could have written it");
    }
    if (r[at] == BudgetStep.INVALID_CLOCK) {
      return StepResult.invalidClock("clock reading outside 1..2^52 - 2^49 microseconds");
    }
    return StepResult.decided(r[at + 1] == 1, r[at + 2], r[at + 3], r[at + 4], r[at + 5], r[at + 6] == 1);
  }

  private static Throwable unwrap(Throwable e) {
    while ((e instanceof ExecutionException || e instanceof CompletionException) && e.getCause() != null) {
      e = e.getCause();
    }
    return e;
  }
}
