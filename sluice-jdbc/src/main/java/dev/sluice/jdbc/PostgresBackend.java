package dev.sluice.jdbc;

import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.internal.Checks;
import dev.sluice.jdbc.PostgresCall.Op;
import dev.sluice.jdbc.internal.DeadlineTask;
import dev.sluice.jdbc.internal.SqlFailure;
import dev.sluice.spi.Backend;
import dev.sluice.spi.Capabilities;
import dev.sluice.spi.StepResult;
import dev.sluice.spi.StoreNotReachedException;
import java.sql.SQLException;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * PostgreSQL as a {@link Backend}: every step is one statement ({@link PostgresStatements}) run on
 * the limiter's executor and waited for until the deadline; a coalesced batch is one statement too.
 * In tenant mode the tenant is read on the caller's thread and is a batch's scope.
 */
final class PostgresBackend implements Backend<Policy> {
  /**
   * A row holds a fixed-size state (no sliding log); every algorithm it runs is batched; the
   * statements run on the executor and hold no caller's thread.
   */
  static final Capabilities CAPABILITIES = Capabilities.fixedSize("PostgreSQL").withBatches().withAsyncSteps();

  final PostgresStatements statements;
  final PostgresSql sql;
  private final Supplier<String> tenant;
  private final Executor executor;
  private final ExecutorService ownExecutor;
  private final Ticker ticker; // null: the database's clock
  private final String description;

  PostgresBackend(PostgresStatements statements, PostgresSql sql, Supplier<String> tenant, Executor executor, ExecutorService ownExecutor,
                  Ticker ticker, String description) {
    this.statements = statements;
    this.sql = sql;
    this.tenant = tenant;
    this.executor = executor;
    this.ownExecutor = ownExecutor;
    this.ticker = ticker;
    this.description = description;
  }

  @Override public Capabilities capabilities() {
    return CAPABILITIES;
  }

  /** The policy itself: the capabilities already refused what a row cannot hold. */
  @Override public Policy compile(Policy p) {
    return p;
  }

  /** The statement runs on the executor (so the deadline holds even for a sync call); this thread waits at most until the deadline. */
  @Override public StepResult step(Policy p, Step step, String key, long permits, Ticket ticket, long now, long deadline)
      throws Exception {
    return submit(call(p, step, key, permits, now, deadline), ticket).await();
  }

  /** The statement on the executor, holding no caller thread. */
  @Override public CompletableFuture<StepResult> stepAsync(Policy p, Step step, String key, long permits, Ticket ticket,
                                                           long now, long deadline) {
    PostgresCall call = call(p, step, key, permits, now, deadline); // the tenant is read here, on the caller's thread
    try {
      return submit(call, ticket);
    } catch (StoreNotReachedException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** A coalesced batch: one statement ({@code PostgresSql.batch}) on the executor, waited for until the deadline. */
  @Override public StepResult[] stepBatch(Policy p, String tenantId, String key, long[] permits, long now, long deadline)
      throws Exception {
    return submitBatch(batchCall(p, tenantId, key, permits, now, deadline)).await();
  }

  @Override public CompletableFuture<StepResult[]> stepBatchAsync(Policy p, String tenantId, String key, long[] permits,
                                                                  long now, long deadline) {
    PostgresCall call = batchCall(p, tenantId, key, permits, now, deadline);
    try {
      return submitBatch(call);
    } catch (StoreNotReachedException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * The tenant ('' outside tenant mode), read on the caller's thread: a batch holds one tenant's
   * requests and its statement runs under that tenant ({@link #stepBatch}'s scope), whichever thread
   * sends it. A supplier that throws or gives an invalid tenant keeps the request out of coalescing,
   * and its own statement meets the same error, as without coalescing.
   */
  @Override public String batchScope(Policy p) {
    return currentTenant();
  }

  @Override public void delete(Policy p, String key, long deadline) throws Exception {
    PostgresCall call = new PostgresCall(Op.RESET, p, key, 1, PostgresRow.code(p.algorithm()), currentTenant(), deadline);
    call.now = now();
    DeadlineTask.submit(executor, deadline, () -> {
      statements.reset(call);
      return null;
    }).await();
  }

  /** The one SQLSTATE-to-reason map, shared with the versioned store ({@link SqlFailure}). */
  @Override public Reason classify(Throwable e) {
    return e instanceof SQLException ? SqlFailure.reason(e) : Backend.super.classify(e);
  }

  /** Stops the limiter's own executor (a supplied executor and the DataSource are the caller's). */
  @Override public void close() {
    if (ownExecutor != null) {
      ownExecutor.shutdown();
    }
  }

  @Override public String describe() {
    return description;
  }

  private PostgresCall batchCall(Policy p, String tenantId, String key, long[] permits, long now, long deadline) {
    long least = Long.MAX_VALUE;
    for (long n : permits) {
      least = Math.min(least, n);
    }
    PostgresCall c = call(p, Step.ACQUIRE, tenantId, key, least, now, deadline);
    c.batch = permits;
    return c;
  }

  private DeadlineTask<StepResult> submit(PostgresCall call, Ticket ticket) {
    return submit(call, () -> switch (call.op) {
      case ACQUIRE -> statements.acquire(call);
      case PEEK -> statements.peek(call);
      case REFUND, OVERRUN -> StepResult.decided(false, 0, 0, 0, 0, statements.refund(call, ticket));
      default -> throw new IllegalStateException("not a decision: " + call.op);
    }, corrupt -> corrupt);
  }

  private DeadlineTask<StepResult[]> submitBatch(PostgresCall call) {
    return submit(call, () -> call.batch.length == 1 ? new StepResult[] {statements.acquire(call)} : statements.batch(call),
        corrupt -> {
          StepResult[] rs = new StepResult[call.batch.length];
          Arrays.fill(rs, corrupt);
          return rs;
        });
  }

  /** The JDBC work of one call. */
  private interface Work<T> {
    T run() throws SQLException;
  }

  /**
   * Runs {@code work} on the executor by the call's deadline ({@link DeadlineTask}: a call whose
   * caller was already answered never runs); a malformed row is corrupt state ({@code corrupt} makes
   * the call's result of it), nothing written.
   */
  private <T> DeadlineTask<T> submit(PostgresCall call, Work<T> work, Function<StepResult, T> corrupt) {
    return DeadlineTask.submit(executor, call.deadline, call.connectionWait::abandon, () -> {
      try {
        return work.run();
      } catch (StoreFailure f) {
        if (f.reason == Reason.CORRUPT_STATE) {
          return corrupt.apply(StepResult.corrupt("the row of the key is not a state Sluice wrote"));
        }
        throw f.getCause() instanceof Exception cause ? cause : f;
      }
    });
  }

  /** A call of {@code step} with the current tenant (read on the caller's thread). */
  private PostgresCall call(Policy p, Step step, String key, long permits, long now, long deadline) {
    return call(p, step, currentTenant(), key, permits, now, deadline);
  }

  /** A call of {@code step} under {@code tenantId} ('' outside tenant mode). */
  private PostgresCall call(Policy p, Step step, String tenantId, String key, long permits, long now, long deadline) {
    Op op = switch (step) {
      case ACQUIRE -> Op.ACQUIRE;
      case PEEK -> Op.PEEK;
      case REFUND -> Op.REFUND;
      case OVERRUN -> Op.OVERRUN;
    };
    PostgresCall c = new PostgresCall(op, p, key, permits, PostgresRow.code(p.algorithm()), tenantId, deadline);
    c.now = now;
    return c;
  }

  /** An administrative call's instant: the supplied ticker's (at least 1), or 0 for the database's clock. */
  long now() {
    return ticker != null ? Math.max(1, ticker.nowMicros()) : 0;
  }

  /** The current tenant, read from the supplier on this thread and validated; '' outside tenant mode. */
  String currentTenant() {
    return tenant == null ? "" : Checks.tenant(tenant.get());
  }
}
