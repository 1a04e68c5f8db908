package dev.sluice.jdbc.internal;

import dev.sluice.Reason;
import java.net.SocketTimeoutException;
import java.sql.SQLException;
import java.sql.SQLTimeoutException;
import java.sql.SQLTransientConnectionException;

/**
 * What a failed JDBC call means: the one map from SQL failures to a {@link Reason}, for both of this
 * module's backends. {@code JdbcRateLimiter} decides with the reason; {@code JdbcVersionedStore}
 * throws {@code StoreTimeoutException} for {@link Reason#TIMEOUT} and {@code StoreException} for the
 * rest, which the engine maps back to the same reasons.
 *
 * <p>Every link of the cause chain is looked at (drivers wrap a socket timeout in a connection
 * error), timeouts first:
 * <table>
 *   <caption>SQL failures and their reasons</caption>
 *   <tr><th>failure</th><th>reason</th></tr>
 *   <tr><td>{@link SQLTimeoutException}; SQLSTATE 57014 (PostgreSQL query canceled: statement_timeout,
 *       a query timeout, a cancel); 70100 (MariaDB and MySQL query interrupted: max_statement_time, a
 *       query timeout, KILL QUERY)</td><td>TIMEOUT: the statement ran out of time</td></tr>
 *   <tr><td>SQLSTATE 55P03 (PostgreSQL lock not available: lock_timeout, NOWAIT); vendor code 1205
 *       with SQLSTATE HY000 (MariaDB and MySQL lock wait timeout)</td><td>TIMEOUT: a lock wait ran out</td></tr>
 *   <tr><td>{@link SocketTimeoutException} (the connection's network or connect timeout, which the drivers
 *       report as a connection error, 08006 or 08000)</td><td>TIMEOUT: the server did not answer in time</td></tr>
 *   <tr><td>{@link SQLTransientConnectionException} (HikariCP: no pooled connection within its
 *       connection timeout)</td><td>TIMEOUT: no connection in time</td></tr>
 *   <tr><td>SQLSTATE 22003, 22012 (numeric value out of range, division by zero)</td><td>CORRUPT_STATE: only
 *       the limiter's arithmetic on a malformed row gets there</td></tr>
 *   <tr><td>anything else: connection failures (class 08: refused, reset, closed), 57P01 (terminated by
 *       an administrator), permission and row-level security errors, a missing table</td>
 *       <td>STORE_UNAVAILABLE</td></tr>
 * </table>
 *
 * <p>Not API: this package is not exported.
 */
public final class SqlFailure {
  /** Links of a cause chain looked at; a longer chain (or a cycle) is cut there. */
  private static final int MAX_DEPTH = 16;

  private SqlFailure() {}

  /** The reason {@code failure} means for a decision. */
  public static Reason reason(Throwable failure) {
    int depth = 0;
    for (Throwable t = failure; t != null && depth < MAX_DEPTH; t = t.getCause(), depth++) {
      if (timedOut(t)) {
        return Reason.TIMEOUT;
      }
    }
    depth = 0;
    for (Throwable t = failure; t != null && depth < MAX_DEPTH; t = t.getCause(), depth++) {
      if (t instanceof SQLException s && ("22003".equals(s.getSQLState()) || "22012".equals(s.getSQLState()))) {
        return Reason.CORRUPT_STATE;
      }
    }
    return Reason.STORE_UNAVAILABLE;
  }

  /**
   * Whether {@code failure} says the store cannot be reached: no connection could be had (refused,
   * none from the pool within its timeout), or one was lost (SQLSTATE class 08, a socket timeout,
   * 57P01..57P03: terminated, crashed, not accepting connections yet). A statement timeout, a lock
   * timeout, a permission or row-level security error say the store answered.
   */
  public static boolean unreachable(Throwable failure) {
    int depth = 0;
    for (Throwable t = failure; t != null && depth < MAX_DEPTH; t = t.getCause(), depth++) {
      if (t instanceof SQLTransientConnectionException || t instanceof SocketTimeoutException
          || t instanceof java.net.ConnectException) {
        return true;
      }
      if (t instanceof SQLException s && s.getSQLState() != null && (s.getSQLState().startsWith("08")
          || "57P01".equals(s.getSQLState()) || "57P02".equals(s.getSQLState()) || "57P03".equals(s.getSQLState()))) {
        return true;
      }
    }
    return false;
  }

  private static boolean timedOut(Throwable t) {
    if (t instanceof SQLTimeoutException || t instanceof SQLTransientConnectionException
        || t instanceof SocketTimeoutException) {
      return true;
    }
    if (t instanceof SQLException s) {
      String state = s.getSQLState();
      return "57014".equals(state) || "70100".equals(state) || "55P03".equals(state)
          || ("HY000".equals(state) && s.getErrorCode() == 1205);
    }
    return false;
  }
}
