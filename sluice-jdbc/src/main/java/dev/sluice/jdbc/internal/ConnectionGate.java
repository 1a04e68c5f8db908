package dev.sluice.jdbc.internal;

import dev.sluice.internal.DeadlineTimer;
import dev.sluice.spi.StoreNotReachedException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;

/**
 * Where decisions get their connections from a {@link DataSource}, and how they get them again after
 * the store was lost (issue 26, "recovery needs no restart"). One gate per data source, shared by
 * every limiter over it.
 *
 * <p>Open, a decision borrows from the data source as usual. A failure that says the store cannot be
 * reached ({@link SqlFailure#unreachable}: refused, terminated, lost, no answer) closes it: decisions
 * are then answered at once as not reached (STORE_UNAVAILABLE, as an outage is: no caller's thread is
 * held for its whole deadline on every decision of an outage, and none waits in the pool), and one
 * probe thread asks the data source for a connection, checks it with {@code SELECT 1} and opens the
 * gate on the first that answers. The next decision goes to the store.
 *
 * <p>Why not simply wait in the pool. When PostgreSQL restarts every pooled connection dies, and the
 * pool opens new ones. HikariCP opens them on one background thread, and after each failed attempt it
 * sleeps before the next, 10 ms doubling up to 5 s, for as long as a borrower waits, which under load
 * is always: after outages of 2 s its next attempt came 0.2 to 5.2 s after the server accepted
 * connections again (PostgresRecoveryTest), whatever the limiter did. Here only the probe borrows,
 * for at most {@link #probeWaitNanos} (5 ms with HikariCP), then pauses 10 to 20 ms, at random so as
 * not to fall in step with the pool's sleeps: when the pool wakes from its first sleep mostly nobody
 * waits, its attempt ends, and the probe's next borrow starts one afresh. The pool then tries the
 * server every 20 to 40 ms however long the outage, and a probe finds the first connection it opens.
 * (HikariCP keeps trying by itself as long as it holds fewer than {@code minimumIdle} connections,
 * whoever waits: hence {@code minimumIdle = 0} in docs/postgresql.md.)
 *
 * <p>The probe borrows through the data source, never around it, so a user's pool, its settings and
 * its credentials stay in charge. It runs while decisions are asked, and stops after
 * {@link #PROBE_IDLE_NANOS} without one (the next decision starts it again).
 *
 * <p>A socket timeout closes the gate, so it must mean the server stopped answering, not that a
 * statement waited for a lock: a connection's network timeout is {@link #networkTimeoutMillis}, twice
 * the call's deadline and at least a second, for both backends of this module. The caller is answered
 * at its deadline either way ({@link DeadlineTask}); the worker is freed by the network timeout.
 *
 * <p>{@code JdbcRateLimiter}'s statements share one gate per data source ({@link #of}); a
 * {@code JdbcVersionedStore} has its own ({@link #ConnectionGate()}), so that how one backend reads a
 * failure never answers for the other. Not API: this package is not exported.
 */
public final class ConnectionGate {
  /** The shortest a probe waits for a connection before it withdraws from the pool's queue. */
  static final long PROBE_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(5);
  /** The probe's pause after an attempt that got no connection, at least; up to twice as long, at random. */
  static final long PROBE_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
  /** A probe with no decision waiting for this long stops. */
  static final long PROBE_IDLE_NANOS = TimeUnit.SECONDS.toNanos(10);
  private static final Executor DIRECT = Runnable::run;
  private static final Map<DataSource, ConnectionGate> GATES = new WeakHashMap<>();

  /** Whether decisions are answered as not reached until the probe reaches the store. */
  private volatile boolean closed;
  /** When a decision was last asked at the closed gate. */
  private volatile long lastAsked;
  /** How long a borrow takes: the fastest lately (it falls to a faster one at once, rises by 1/64 of a slower one); -1 before the first. */
  private volatile long typicalBorrowNanos = -1;
  private Thread probe; // guarded by this

  /** A gate of one's own (a versioned store's), open. */
  public ConnectionGate() {}

  /**
   * The network timeout of a connection used for a call whose deadline is {@code budgetNanos} away:
   * twice that, at least one second. A read that times out after it means the server stopped
   * answering, and closes the gate; a statement that waits for a lock longer than its deadline does
   * not get there before its caller is answered.
   */
  public static int networkTimeoutMillis(long budgetNanos) {
    return (int) Math.min(Integer.MAX_VALUE, Math.max(1_000, 2 * TimeUnit.NANOSECONDS.toMillis(Math.max(0, budgetNanos))));
  }

  /** The gate of {@code dataSource}, shared by every limiter over it (kept no longer than the data source). */
  public static ConnectionGate of(DataSource dataSource) {
    synchronized (GATES) {
      return GATES.computeIfAbsent(dataSource, ds -> new ConnectionGate());
    }
  }

  /**
   * A connection from {@code dataSource} for a call answered by {@code deadline}, while the gate is
   * open. Throws {@link StoreNotReachedException}: at once while it is closed; caused by a
   * {@link TimeoutException} when the deadline passes first or the caller abandoned {@code wait}. An
   * {@link SQLException} from the data source as it comes.
   */
  public Connection borrow(DataSource dataSource, ConnectionWait wait, long deadline, int networkTimeoutMillis)
      throws SQLException {
    if (closed) {
      lastAsked = System.nanoTime();
      startProbe(dataSource, networkTimeoutMillis);
      throw new StoreNotReachedException("the store has not answered since the limiter lost it; a probe is asking it again");
    }
    long start = System.nanoTime();
    if (!wait.begin()) {
      throw notReached("the caller was answered before a connection was asked for");
    }
    Connection conn;
    try {
      conn = dataSource.getConnection();
    } catch (SQLException | RuntimeException e) {
      if (!wait.end()) {
        throw notReached("the caller was answered while the connection was awaited");
      }
      throw e;
    }
    if (!wait.end() || System.nanoTime() - deadline >= 0) {
      // Nobody waits for this statement any longer: the connection goes back unused, to a caller who does.
      conn.close();
      throw notReached("the deadline passed while the connection was awaited");
    }
    long took = System.nanoTime() - start;
    long typical = typicalBorrowNanos;
    typicalBorrowNanos = typical < 0 || took < typical ? took : typical + (took - typical) / 64;
    return conn;
  }

  /** A decision's statement or borrow failed with {@code failure}: when it says the store is unreachable, the gate closes. */
  public void failed(DataSource dataSource, SQLException failure, int networkTimeoutMillis) {
    if (!closed && SqlFailure.unreachable(failure)) {
      closed = true;
      lastAsked = System.nanoTime();
      startProbe(dataSource, networkTimeoutMillis);
    }
  }

  /** Whether decisions are answered as not reached until the probe reaches the store (tests). */
  public boolean isClosed() {
    return closed;
  }

  private synchronized void startProbe(DataSource dataSource, int networkTimeoutMillis) {
    if (probe == null && closed) {
      probe = new Thread(() -> probe(dataSource, networkTimeoutMillis), "sluice-jdbc-probe");
      probe.setDaemon(true);
      probe.start();
    }
  }

  /** Asks for a connection until one answers {@code SELECT 1}, then opens the gate; stops early when no decision waits. */
  private void probe(DataSource dataSource, int networkTimeoutMillis) {
    try {
      while (closed && System.nanoTime() - lastAsked < PROBE_IDLE_NANOS) {
        Connection c = probeBorrow(dataSource, networkTimeoutMillis);
        if (c == null) {
          pause();
          continue;
        }
        try (c; Statement s = c.createStatement()) {
          s.execute("SELECT 1");
          open();
          return;
        } catch (SQLException | RuntimeException deadConnection) {
          // A connection the server had lost: the pool drops it (its state is 08); try the next at once.
        }
      }
    } finally {
      synchronized (this) {
        probe = null;
      }
    }
  }

  /**
   * Sleeps {@link #PROBE_PAUSE_NANOS}. Not one park: the withdrawing interrupt left this thread a
   * permit, which would end it at once, and the pool would see the probe waiting again.
   */
  private static void pause() {
    long pause = PROBE_PAUSE_NANOS + java.util.concurrent.ThreadLocalRandom.current().nextLong(PROBE_PAUSE_NANOS);
    long end = System.nanoTime() + pause;
    for (long left = pause; left > 0; left = end - System.nanoTime()) {
      LockSupport.parkNanos(left);
    }
  }

  /**
   * One borrow, withdrawn from the pool's queue after {@link #probeWaitNanos}: null when it got
   * nothing. A connection that arrives although the probe withdrew is kept: a driver that connects
   * on this thread ignores the interrupt and finishes.
   */
  private Connection probeBorrow(DataSource dataSource, int networkTimeoutMillis) {
    ConnectionWait wait = new ConnectionWait();
    DeadlineTimer.Timeout withdraw = DeadlineTimer.shared().schedule(wait::abandon, System.nanoTime() + probeWaitNanos());
    Connection c = null;
    try {
      wait.begin();
      c = dataSource.getConnection();
      c.setNetworkTimeout(DIRECT, networkTimeoutMillis);
      return c;
    } catch (SQLException | RuntimeException e) {
      if (c != null) {
        try {
          c.close();
        } catch (SQLException ignored) {
          // it is broken already
        }
      }
      return null;
    } finally {
      withdraw.cancel();
      wait.end();
    }
  }

  /**
   * How long the probe waits for one connection: {@link #PROBE_WAIT_NANOS}, or four times a typical
   * borrow when that is longer, so that a data source that opens a connection per call (where an
   * interrupt may abort the connect) is given the time a connection takes; a second before the first
   * borrow, when that time is unknown.
   */
  private long probeWaitNanos() {
    long typical = typicalBorrowNanos;
    return typical < 0 ? TimeUnit.SECONDS.toNanos(1) : Math.max(PROBE_WAIT_NANOS, 4 * typical);
  }

  private void open() {
    closed = false;
  }

  private static StoreNotReachedException notReached(String why) {
    return new StoreNotReachedException(why, new TimeoutException(why));
  }
}
