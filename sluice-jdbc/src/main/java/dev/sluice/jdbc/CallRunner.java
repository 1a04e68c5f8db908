package dev.sluice.jdbc;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.jdbc.PostgresCall.Op;
import dev.sluice.jdbc.internal.SqlFailure;
import java.sql.SQLException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Around each call of a {@link JdbcRateLimiter}: runs its statements ({@link PostgresStatements}) on
 * the executor, answers the caller by the call's deadline, turns a failure into the failure mode's
 * decision with its {@link Reason} ({@link SqlFailure}), and tells the listener.
 */
final class CallRunner {
  private static final System.Logger LOG = System.getLogger(JdbcRateLimiter.class.getName());

  private final PostgresStatements statements;
  private final Executor executor;
  private final FailureMode failureMode;
  private final Ticker ticker;
  private final RateLimitListener listener;

  CallRunner(PostgresStatements statements, Executor executor, FailureMode failureMode, Ticker ticker,
             RateLimitListener listener) {
    this.statements = statements;
    this.executor = executor;
    this.failureMode = failureMode;
    this.ticker = ticker;
    this.listener = listener;
  }

  /** The sync path: the statement runs on the executor; this thread waits at most until the deadline. */
  Decision decide(PostgresCall call) {
    if (call.invalidClock) {
      return finish(call, failure(call, Reason.INVALID_CLOCK, null));
    }
    CompletableFuture<Decision> f;
    try {
      f = CompletableFuture.supplyAsync(() -> run(call), executor);
    } catch (RejectedExecutionException e) {
      return finish(call, failure(call, Reason.STORE_UNAVAILABLE, e));
    }
    long left = call.deadline - System.nanoTime();
    Decision d;
    try {
      d = f.get(Math.max(0, left), TimeUnit.NANOSECONDS);
      d = d != null ? d : failure(call, Reason.TIMEOUT, null);
    } catch (TimeoutException e) {
      d = failure(call, Reason.TIMEOUT, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      d = failure(call, Reason.TIMEOUT, e);
    } catch (ExecutionException e) {
      d = e.getCause() instanceof StoreFailure sf ? failure(call, sf.reason, sf.getCause())
          : failure(call, Reason.STORE_UNAVAILABLE, e.getCause());
    }
    return finish(call, d);
  }

  /** The async path: completes with a decision by the deadline. */
  CompletionStage<Decision> async(PostgresCall call) {
    if (call.invalidClock) {
      return CompletableFuture.completedFuture(finish(call, failure(call, Reason.INVALID_CLOCK, null)));
    }
    CompletableFuture<Decision> f;
    try {
      f = CompletableFuture.supplyAsync(() -> run(call), executor);
    } catch (RejectedExecutionException e) {
      return CompletableFuture.completedFuture(finish(call, failure(call, Reason.STORE_UNAVAILABLE, e)));
    }
    long left = call.deadline - System.nanoTime();
    return f.orTimeout(Math.max(0, left), TimeUnit.NANOSECONDS).handle((d, e) -> {
      if (e == null && d != null) {
        return finish(call, d);
      }
      Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
      if (cause instanceof StoreFailure sf) {
        return finish(call, failure(call, sf.reason, sf.getCause()));
      }
      return finish(call, failure(call, cause instanceof TimeoutException || e == null ? Reason.TIMEOUT : Reason.STORE_UNAVAILABLE, cause));
    });
  }

  private Decision finish(PostgresCall call, Decision d) {
    listener.onDecision(d, call.key);
    return d;
  }

  /** The decision of the failure mode for {@code reason} (corrupt state and invalid clock are always closed). */
  private Decision failure(PostgresCall call, Reason reason, Throwable cause) {
    long now = ticker != null ? ticker.nowMicros() : Ticker.system().nowMicros();
    if (call.op == Op.PEEK && failureMode instanceof FailureMode.Fallback fb
        && reason != Reason.CORRUPT_STATE && reason != Reason.INVALID_CLOCK) {
      try {
        return fb.local().peek(call.key, call.policy).withPath(Path.FALLBACK);
      } catch (RuntimeException e) {
        return FailureMode.closed().decide(call.policy, call.key, 1, reason, cause, now);
      }
    }
    return failureMode.decide(call.policy, call.key, call.permits, reason, cause, now);
  }

  /**
   * Runs on the executor: the statement(s) of one call. A failure is thrown as {@link StoreFailure}
   * and turned into a decision by the waiting caller, so the failure mode (and its alert) runs once.
   */
  private Decision run(PostgresCall call) {
    if (System.nanoTime() - call.deadline >= 0) {
      return null; // the caller has already been answered with a timeout; do not touch the store
    }
    long start = System.nanoTime();
    try {
      Decision d = call.op == Op.PEEK ? statements.peek(call) : statements.acquire(call);
      listener.onStoreCall(call.policy, System.nanoTime() - start, null);
      return d;
    } catch (StoreFailure e) {
      listener.onStoreCall(call.policy, System.nanoTime() - start, null);
      throw e;
    } catch (SQLException | RuntimeException e) {
      listener.onStoreCall(call.policy, System.nanoTime() - start, e);
      throw new StoreFailure(SqlFailure.reason(e), e);
    }
  }

  /** Refunds a spent {@code ticket} by the deadline; a failure unspends it (the permits stay counted). */
  Refund refund(PostgresCall call, Ticket ticket) {
    Refund result;
    try {
      CompletableFuture<Refund> f = CompletableFuture.supplyAsync(() -> refundTask(call, ticket.stamp()), executor);
      result = f.get(Math.max(0, call.deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      result = Refund.FAILED;
    } catch (TimeoutException | ExecutionException | RejectedExecutionException e) {
      result = Refund.FAILED;
    }
    if (result == Refund.FAILED) {
      // Stricter, never weaker: the permits stay counted, and the ticket may be tried again.
      ticket.unspend();
    }
    return reportRefund(call.policy, result);
  }

  Refund reportRefund(Policy p, Refund r) {
    listener.onRefund(p, r);
    return r;
  }

  private Refund refundTask(PostgresCall call, long stamp) {
    if (System.nanoTime() - call.deadline >= 0) {
      return Refund.FAILED;
    }
    long start = System.nanoTime();
    try {
      boolean applied = statements.refund(call, stamp);
      listener.onStoreCall(call.policy, System.nanoTime() - start, null);
      return applied ? Refund.APPLIED : Refund.NO_EFFECT;
    } catch (SQLException | RuntimeException e) {
      listener.onStoreCall(call.policy, System.nanoTime() - start, e);
      LOG.log(System.Logger.Level.WARNING, "refund failed; the permits stay counted", e);
      return Refund.FAILED;
    }
  }

  /** Resets by the deadline; a failure is logged and told to the listener, never thrown. */
  void reset(PostgresCall call) {
    try {
      CompletableFuture.runAsync(() -> {
        long start = System.nanoTime();
        try {
          statements.reset(call);
          listener.onStoreCall(call.policy, System.nanoTime() - start, null);
        } catch (SQLException e) {
          listener.onStoreCall(call.policy, System.nanoTime() - start, e);
          throw new IllegalStateException(e);
        }
      }, executor).get(Math.max(0, call.deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (TimeoutException | ExecutionException | RejectedExecutionException e) {
      LOG.log(System.Logger.Level.WARNING, "reset of a key under policy '" + call.policy.name()
          + "' failed; the key keeps its state", e);
    }
  }
}
