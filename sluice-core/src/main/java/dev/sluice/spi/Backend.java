package dev.sluice.spi;

import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Ticket;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;

/**
 * What a store implements so that Sluice can decide against it: compile a policy into what the store
 * runs, one atomic {@link #step} per decision, refund or settlement, and {@link #delete}; optionally
 * a {@link #stepBatch batch} and asynchronous variants, as its {@link #capabilities()} say. A backend
 * decides nothing else: validation, the clock, deadlines, request coalescing, the mapping of a
 * {@link StepResult} to a {@link dev.sluice.Decision}, the failure mode, tickets and listener events
 * are the one {@link StoreRateLimiter} pipeline around it, the same for every store.
 *
 * <pre>{@code
 * RateLimiter limiter = StoreRateLimiter.builder(policy, new MyBackend(...)).timeout(Duration.ofMillis(100)).build();
 * }</pre>
 *
 * A budget is its policy's name and the key: a backend keys its state by those two alone, so a
 * per-call override with the same name and other numbers applies them to the existing state. A
 * backend is called from many threads at once.
 *
 * @param <P> what the backend compiles a policy into (a script and its arguments, a statement)
 */
public interface Backend<P> extends AutoCloseable {
  /** The {@code now} a step gets when the store reads its own clock (no ticker supplied). */
  long STORE_CLOCK = 0;

  /** What a step is asked to do. */
  enum Step {
    /** Spend the permits if they fit. */
    ACQUIRE,
    /** Answer whether one permit fits, writing nothing. */
    PEEK,
    /** Give a ticket's permits back to the window or bucket of its stamp. */
    REFUND,
    /**
     * Charge a settlement's overrun ({@link dev.sluice.model.ReferenceModel#settle} with a positive
     * difference): {@code permits} is the actual cost minus the reservation, at least 1, and
     * {@code stamp} the ticket's. A settlement below the reservation is a {@link #REFUND} of the
     * difference. Either way one round trip, as an acquire.
     */
    OVERRUN
  }

  /** What this backend can do, stated once; read once when the limiter is built. */
  Capabilities capabilities();

  /**
   * Compiles {@code policy} (whose algorithm the {@link #capabilities()} run) for this store; throws
   * {@link IllegalArgumentException} naming the rule when the store cannot run it.
   */
  P compile(Policy policy);

  /**
   * One atomic step against the store, finished by {@code deadlineNanos} ({@link #nanoTime()}).
   * {@code now} is the supplied clock reading, or {@link #STORE_CLOCK}. {@code ticket} is the ticket a
   * {@link Step#REFUND} or {@link Step#OVERRUN} spends (null for acquires and peeks): the step applies
   * its {@code permits} under the ticket's {@link Ticket#stamp() stamp}, and <b>in the same atomic
   * operation</b> records the ticket's {@link Ticket#id() id} as spent for this budget, kept at least
   * until {@link dev.sluice.model.ReferenceModel#ticketExpiresAt} (swept with the state); a ticket
   * already recorded, or past that instant at {@code now}, changes nothing ({@code wrote} false).
   * So a step retried after an unknown outcome applies at most once. Throws for store trouble:
   * {@link StoreNotReachedException} when nothing reached the store, any other exception when the
   * outcome is unknown; an {@link IllegalArgumentException} is a programmer error and reaches the caller.
   */
  StepResult step(P plan, Step step, String key, long permits, Ticket ticket, long now, long deadlineNanos) throws Exception;

  /**
   * {@link #step} without holding the calling thread, for acquires; only called when the capabilities
   * say {@link Capabilities#asyncSteps()}. The pipeline completes the decision at the deadline itself
   * and then cancels the returned future. The default runs {@link #step} on the calling thread.
   */
  default CompletableFuture<StepResult> stepAsync(P plan, Step step, String key, long permits, Ticket ticket, long now,
                                                  long deadlineNanos) {
    try {
      return CompletableFuture.completedFuture(step(plan, step, key, permits, ticket, now, deadlineNanos));
    } catch (Exception e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * Decides {@code permits.length} acquires for {@code key} in one atomic store call, in order, at
   * one instant: each exactly as {@link #step} would decide it after the ones before it. Returns one
   * result per request (a failure such as corrupt state is every request's result). Only called for
   * a plan whose algorithm the capabilities {@link Capabilities#batches batch}. {@code scope} is every
   * request's {@link #batchScope} (requests of different scopes never share a batch); a batch may run
   * on any thread, so a step that depends on the caller's context reads it from {@code scope}, never
   * from the thread. Throws as {@link #step} does.
   */
  default StepResult[] stepBatch(P plan, String scope, String key, long[] permits, long now, long deadlineNanos)
      throws Exception {
    throw new UnsupportedOperationException("this backend decides no batches");
  }

  /** {@link #stepBatch} without holding the calling thread; the default runs it on the calling thread. */
  default CompletableFuture<StepResult[]> stepBatchAsync(P plan, String scope, String key, long[] permits, long now,
                                                         long deadlineNanos) {
    try {
      return CompletableFuture.completedFuture(stepBatch(plan, scope, key, permits, now, deadlineNanos));
    } catch (Exception e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * What, besides the policy and the key, requests must share to go in one batch: the part of a
   * step that comes from the caller's context (PostgreSQL's tenant in tenant mode), read on the
   * caller's thread as an acquire enters coalescing, and handed to {@link #stepBatch} as its
   * {@code scope}. The default, null, is no scope. A request whose scope cannot be read (this method
   * throws) is not coalesced: its own {@link #step} runs, which must meet the same trouble and
   * answer as it always does.
   */
  default String batchScope(P plan) {
    return null;
  }

  /** Deletes {@code key}'s state under {@code plan}'s policy. */
  void delete(P plan, String key, long deadlineNanos) throws Exception;

  /**
   * The reason a store exception decides: {@link Reason#TIMEOUT} or {@link Reason#STORE_UNAVAILABLE}.
   * The default is the core's rule ({@link #timeout}); a backend adds its client's own timeouts.
   */
  default Reason classify(Throwable error) {
    return timeout(error) ? Reason.TIMEOUT : Reason.STORE_UNAVAILABLE;
  }

  /**
   * The core's timeout rule: a {@link StoreTimeoutException} or {@link TimeoutException}, or a call
   * never sent because its deadline passed first (a {@link StoreNotReachedException} caused by a
   * {@link TimeoutException}, which stays not-reached for a refund).
   */
  static boolean timeout(Throwable error) {
    return error instanceof StoreTimeoutException || error instanceof TimeoutException
        || error instanceof StoreNotReachedException && error.getCause() instanceof TimeoutException;
  }

  /** The clock deadlines are measured on: {@link System#nanoTime()}, or a test's fake. */
  default long nanoTime() {
    return System.nanoTime();
  }

  /** Releases what the backend opened itself (a connection, an executor); never what it was given. */
  @Override default void close() {
  }

  /** Describes the backend for the limiter's {@code toString} (no keys, no secrets). */
  default String describe() {
    return getClass().getSimpleName();
  }
}
