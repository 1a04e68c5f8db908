package dev.sluice.jdbc.store;

import dev.sluice.testing.ManualTicker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Decision;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.internal.StoredId;
import dev.sluice.jdbc.store.JdbcVersionedStore.Dialect;
import dev.sluice.spi.StoreTimeoutException;
import dev.sluice.store.VersionedStoreRateLimiter;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 26, the engine over JDBC past its deadline: a call with little time left waited for a
 * connection as long as the pool's own connection timeout allowed (HikariCP's least, 250 ms, for a
 * 250 ms deadline: decisions took 281 to 687 ms in the fault kit). Here a pool that has no connection
 * to give for {@link #POOL_WAIT} stands for it; no database is needed.
 */
class JdbcVersionedStoreDeadlineTest {
  private static final long T0 = JdbcVersionedStoreTest.T0;
  private static final Duration DEADLINE = Duration.ofMillis(100);
  /** How long the pool keeps a borrower waiting: far past any deadline here. */
  private static final Duration POOL_WAIT = Duration.ofSeconds(3);
  /** What a loaded 2-core machine adds to a deadline (the fault kit's margin is 100 ms on 250 ms). */
  private static final Duration MARGIN = Duration.ofMillis(400);

  private final StalledPool pool = new StalledPool(false);
  private final ExecutorService workers = Executors.newCachedThreadPool();
  private final JdbcVersionedStore store = JdbcVersionedStore.builder(pool).dialect(Dialect.POSTGRESQL).executor(workers).build();
  private final Policy policy = Policy.fixedWindow(JdbcVersionedStoreTest.randomPolicyName(), 10, Duration.ofMinutes(1));
  private final Ticket.Issuer issuer = new Ticket.Issuer();
  private final VersionedStoreRateLimiter limiter = VersionedStoreRateLimiter.builder(policy, store)
      .ticker(ManualTicker.at(T0)).timeout(DEADLINE).issuer(issuer).build();

  @AfterEach
  void release() {
    pool.release();
    workers.shutdownNow();
  }

  @Test
  void everyDecisionReturnsByItsDeadlineWhileThePoolHasNoConnectionToGive() {
    Decision acquire = timed("acquire", () -> limiter.tryAcquire("k"));
    assertThat(acquire.reason()).isEqualTo(Reason.TIMEOUT);
    assertThat(acquire.path()).isEqualTo(Path.FAILURE_MODE);
    assertThat(timed("async acquire", () -> limiter.tryAcquireAsync("k", 1).toCompletableFuture().join()).reason())
        .isEqualTo(Reason.TIMEOUT);
    assertThat(timed("peek", () -> limiter.peek("k")).reason()).isEqualTo(Reason.TIMEOUT);
    // Nothing can have been written while the read had no connection: the ticket stays refundable.
    assertThat(timed("refund", () -> limiter.refund(ticket(3)))).isEqualTo(Refund.FAILED);
    assertThat(timed("settle", () -> limiter.settle(ticket(3), 1))).isEqualTo(Settlement.FAILED);
  }

  @Test
  void aStoreCallThrowsATimeoutAtItsDeadlineNotAtThePools() {
    long[] deadline = new long[1];
    assertThatThrownBy(() -> {
      deadline[0] = System.nanoTime() + DEADLINE.toNanos();
      store.compareAndSet(StoredId.policy("p"), StoredId.key("p", "k"), 7, "x", 8, T0, deadline[0]);
    }).isInstanceOf(StoreTimeoutException.class);
    assertThat(Duration.ofNanos(System.nanoTime() - deadline[0])).as("past the deadline").isLessThan(MARGIN);
  }

  /**
   * The caller was answered at its deadline while a worker still waited for a connection: when the
   * connection comes, the worker sends nothing (what the caller was told stays true).
   */
  @Test
  void aStatementWhoseCallerWasAnsweredIsNeverSent() throws Exception {
    assertThat(limiter.tryAcquire("k").reason()).isEqualTo(Reason.TIMEOUT);
    assertThat(limiter.refund(ticket(2))).isEqualTo(Refund.FAILED);
    pool.release();
    workers.shutdown();
    assertThat(workers.awaitTermination(POOL_WAIT.toMillis(), TimeUnit.MILLISECONDS)).as("the workers finished").isTrue();
    assertThat(pool.borrowed.get()).as("connections the workers got after their callers were answered").isEqualTo(2);
    assertThat(pool.statements.get()).as("statements prepared on them").isZero();
  }

  /**
   * A worker that still waits in the pool when its caller is answered leaves the pool's queue at once
   * (a pool that sees borrowers waiting keeps retrying a lost server with a growing back-off).
   */
  @Test
  void aWorkerWhoseCallerWasAnsweredLeavesThePool() throws Exception {
    StalledPool interruptible = new StalledPool(true);
    JdbcVersionedStore over = JdbcVersionedStore.builder(interruptible).dialect(Dialect.POSTGRESQL).executor(workers).build();
    VersionedStoreRateLimiter l = VersionedStoreRateLimiter.builder(policy, over).ticker(ManualTicker.at(T0)).timeout(DEADLINE).build();
    assertThat(l.tryAcquire("k").reason()).isEqualTo(Reason.TIMEOUT);
    workers.shutdown();
    assertThat(workers.awaitTermination(POOL_WAIT.toMillis() / 2, TimeUnit.MILLISECONDS))
        .as("the worker left the pool long before it would have given a connection").isTrue();
    assertThat(interruptible.withdrawn.get()).isEqualTo(1);
    assertThat(interruptible.borrowed.get()).isZero();
  }

  private Ticket ticket(long permits) {
    return issuer.restore(policy, "k", permits, T0, "0123456789abcdef0123456789abcdef");
  }

  private static <T> T timed(String what, Supplier<T> call) {
    long t0 = System.nanoTime();
    T answer = call.get();
    assertThat(Duration.ofNanos(System.nanoTime() - t0)).as("%s, deadline %s", what, DEADLINE).isLessThan(DEADLINE.plus(MARGIN));
    return answer;
  }

  /**
   * A pool with no connection to give until {@link #release()} (at most {@link #POOL_WAIT}); the
   * connections it then gives count the statements prepared on them and run none. An interruptible
   * one leaves its wait when its thread is interrupted, as HikariCP does; the other keeps waiting, as
   * a driver that connects on the calling thread over a blocking socket does.
   */
  private static final class StalledPool extends JdbcVersionedStoreTest.UrlDataSource {
    private final CountDownLatch released = new CountDownLatch(1);
    private final boolean interruptible;
    final AtomicInteger borrowed = new AtomicInteger();
    final AtomicInteger withdrawn = new AtomicInteger();
    final AtomicInteger statements = new AtomicInteger();

    StalledPool(boolean interruptible) {
      super(null);
      this.interruptible = interruptible;
    }

    void release() {
      released.countDown();
    }

    @Override public Connection getConnection() throws SQLException {
      long end = System.nanoTime() + POOL_WAIT.toNanos();
      boolean interrupted = false;
      while (released.getCount() > 0) {
        long left = end - System.nanoTime();
        if (left <= 0) {
          throw new java.sql.SQLTransientConnectionException("no connection within " + POOL_WAIT);
        }
        try {
          released.await(left, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
          if (interruptible) {
            withdrawn.incrementAndGet();
            Thread.currentThread().interrupt();
            throw new SQLException("interrupted", e);
          }
          interrupted = true;
        }
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
      borrowed.incrementAndGet();
      return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
          (proxy, method, args) -> switch (method.getName()) {
            case "getNetworkTimeout" -> 0;
            case "getAutoCommit" -> true;
            case "isClosed" -> false;
            case "setNetworkTimeout", "close" -> null;
            case "prepareStatement" -> {
              statements.incrementAndGet();
              throw new SQLException("sent after its caller was answered");
            }
            default -> throw new UnsupportedOperationException(method.getName());
          });
    }
  }
}
