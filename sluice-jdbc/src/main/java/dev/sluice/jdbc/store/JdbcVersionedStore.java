package dev.sluice.jdbc.store;

import dev.sluice.Reason;
import dev.sluice.jdbc.internal.ConnectionGate;
import dev.sluice.jdbc.internal.ConnectionWait;
import dev.sluice.jdbc.internal.DeadlineTask;
import dev.sluice.jdbc.internal.SqlFailure;
import dev.sluice.jdbc.internal.TableNames;
import dev.sluice.spi.StoreException;
import dev.sluice.spi.StoreNotReachedException;
import dev.sluice.spi.StoreTimeoutException;
import dev.sluice.spi.StoredRecord;
import dev.sluice.spi.VersionedStore;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLIntegrityConstraintViolationException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeoutException;
import javax.sql.DataSource;

/**
 * A {@link VersionedStore} in one SQL table with a version column, over any JDBC {@link DataSource}:
 * PostgreSQL and MariaDB (also MySQL) with their own statements, other databases with plain SQL.
 * Each method is one autocommitted statement; a compare-and-set is
 * {@code UPDATE ... WHERE partition_id = ? AND record_id = ? AND version = ?} (or an insert that
 * yields to an existing row), so it is atomic on every database with row-level write locking.
 *
 * <pre>{@code
 * JdbcVersionedStore store = JdbcVersionedStore.builder(dataSource).table("sluice_store").build();
 * store.createTableIfAbsent();   // or apply JdbcVersionedStore.ddl(Dialect.POSTGRESQL, "sluice_store") yourself
 * RateLimiter limiter = VersionedStoreRateLimiter.builder(policy, store).build();
 * }</pre>
 *
 * <h2>Schema</h2>
 * {@code (partition_id VARCHAR(64), record_id VARCHAR(64), version BIGINT, expires_at BIGINT,
 * state VARCHAR(255), PRIMARY KEY (partition_id, record_id))}, with a bytewise collation for the ids;
 * the DDL of each dialect is a resource of this package ({@code postgresql.sql}, {@code mariadb.sql},
 * {@code generic.sql}) and is returned by {@link #ddl}. Rows hold hashes and counters only, never a
 * raw key. Expired rows stay until {@code VersionedStoreRateLimiter.sweep()} deletes them.
 *
 * <h2>Deadlines</h2>
 * Every call returns by its deadline, connection acquisition included, as {@code JdbcRateLimiter}'s
 * do and by the same mechanism ({@code dev.sluice.jdbc.internal.DeadlineTask}): the JDBC work runs on
 * the store's executor ({@link Builder#executor}) and the calling thread waits for it at most until
 * the deadline; work whose deadline passed while it waited for a worker never starts, and a worker
 * still waiting in the pool when its caller is answered withdraws. On the worker, the connection's
 * network timeout is twice the call's deadline and at least a second, as {@code JdbcRateLimiter}'s
 * ({@code ConnectionGate.networkTimeoutMillis}; the previous value is restored before the connection
 * goes back): a read that times out after that says the server stopped answering, where one cut at
 * the deadline could only say that a statement waited for a lock.
 * A call that did not finish by its deadline, or failed with what the module's one map of SQL
 * failures ({@code dev.sluice.jdbc.internal.SqlFailure}, shared with {@code JdbcRateLimiter}) calls a
 * timeout (a statement or lock timeout, a socket timeout, no pooled connection in time), is a
 * {@link StoreTimeoutException}; work that never started is a
 * {@link StoreNotReachedException} (nothing was sent); any other failure a
 * {@link StoreException}.
 *
 * <h2>Recovery</h2>
 * The store gets its connections through a gate of its own ({@code dev.sluice.jdbc.internal.ConnectionGate},
 * {@code JdbcRateLimiter}'s mechanism): a failure that says the database was lost (refused,
 * terminated, a connection error, no answer within the network timeout) closes it, calls are then
 * answered at once as not reached ({@link StoreNotReachedException}) and one probe thread asks the
 * data source for a connection every 20 to 40 ms, opening the gate on the first that answers
 * {@code SELECT 1}. So the engine is back on the database within tens of milliseconds of its return
 * and no caller is held in the pool during an outage; a pool left to itself retries a lost server
 * with a back-off of up to 5 s. Use HikariCP with {@code minimumIdle = 0} (docs/postgresql.md).
 *
 * <p>Thread-safe; holds no state besides its configuration and its executor. Connections are
 * borrowed per call. {@link #close()} stops the store's own executor.
 */
public final class JdbcVersionedStore implements VersionedStore, AutoCloseable {
  /** The SQL flavour of the statements. */
  public enum Dialect {
    /** PostgreSQL: {@code INSERT ... ON CONFLICT DO NOTHING}, {@code LIMIT}. */
    POSTGRESQL("postgresql.sql"),
    /** MariaDB and MySQL: {@code INSERT IGNORE}, {@code LIMIT}. */
    MARIADB("mariadb.sql"),
    /** Any other database: a plain {@code INSERT} whose unique-key violation means "exists", {@code setMaxRows}. */
    GENERIC("generic.sql");

    private final String resource;

    Dialect(String resource) {
      this.resource = resource;
    }

    /** The dialect of a database from its JDBC product name. */
    public static Dialect of(String databaseProductName) {
      String n = databaseProductName == null ? "" : databaseProductName.toLowerCase(Locale.ROOT);
      if (n.contains("postgres")) {
        return POSTGRESQL;
      }
      if (n.contains("mariadb") || n.contains("mysql")) {
        return MARIADB;
      }
      return GENERIC;
    }
  }

  /** The default table name. */
  public static final String DEFAULT_TABLE = "sluice_store";

  /** Runs the driver's timeout callback in place; only MariaDB's driver insists on having one. */
  private static final Executor DIRECT = Runnable::run;

  private final DataSource dataSource;
  private final String table;
  private final Executor executor;
  private final ExecutorService ownExecutor;
  private final ConnectionGate gate = new ConnectionGate();
  private volatile Dialect dialect;
  private volatile Sql sql;

  private JdbcVersionedStore(Builder b) {
    this.dataSource = b.dataSource;
    this.table = b.table;
    this.ownExecutor = b.executor == null ? DeadlineTask.workers("sluice-jdbc-store") : null;
    this.executor = b.executor != null ? b.executor : ownExecutor;
    this.dialect = b.dialect;
    this.sql = b.dialect == null ? null : new Sql(b.dialect, b.table);
  }

  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /** The table this store uses. */
  public String table() {
    return table;
  }

  /**
   * The {@code CREATE TABLE} statement of {@code dialect} for {@code table} (PostgreSQL and MariaDB:
   * {@code IF NOT EXISTS}), from the resource {@code dev/sluice/jdbc/store/<dialect>.sql}.
   */
  public static String ddl(Dialect dialect, String table) {
    Objects.requireNonNull(dialect, "dialect");
    checkTable(table);
    try (InputStream in = JdbcVersionedStore.class.getResourceAsStream(dialect.resource)) {
      if (in == null) {
        throw new IllegalStateException("missing resource " + dialect.resource);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8).replace("${table}", table).strip();
    } catch (IOException e) {
      throw new IllegalStateException("cannot read resource " + dialect.resource, e);
    }
  }

  /** Creates the table if it does not exist (with the detected dialect's DDL). */
  public void createTableIfAbsent() {
    try (Connection c = dataSource.getConnection()) {
      Dialect d = dialect(c);
      if (d == Dialect.GENERIC && tableExists(c)) {
        return;
      }
      try (Statement s = c.createStatement()) {
        s.execute(ddl(d, table));
      }
      if (!c.getAutoCommit()) {
        c.commit();
      }
    } catch (SQLException e) {
      throw new StoreException("cannot create table " + table + ": " + e.getMessage(), e);
    }
  }

  private boolean tableExists(Connection c) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.setMaxRows(1);
      s.executeQuery("SELECT 1 FROM " + table).close();
      return true;
    } catch (SQLException e) {
      if (!c.getAutoCommit()) {
        c.rollback();
      }
      return false;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // The SPI
  // ---------------------------------------------------------------------------------------------

  @Override public StoredRecord read(String partition, String id, long deadlineNanos) {
    return call(deadlineNanos, "read", (c, q) -> {
      try (PreparedStatement ps = c.prepareStatement(q.read)) {
        ps.setString(1, partition);
        ps.setString(2, id);
        try (ResultSet rs = ps.executeQuery()) {
          return rs.next() ? Sql.record(rs) : null;
        }
      }
    });
  }

  @Override public boolean compareAndSet(String partition, String id, long expectedVersion, String value, long newVersion,
                                         long expiresAtMicros, long deadlineNanos) {
    checkValue(value);
    return call(deadlineNanos, "compare-and-set", (c, q) -> {
      if (expectedVersion == ABSENT) {
        try (PreparedStatement ps = c.prepareStatement(q.insert)) {
          ps.setString(1, partition);
          ps.setString(2, id);
          ps.setLong(3, newVersion);
          ps.setLong(4, expiresAtMicros);
          ps.setString(5, value);
          return ps.executeUpdate() == 1;
        } catch (SQLException e) {
          if (q.dialect == Dialect.GENERIC && isUniqueViolation(e)) {
            return false;
          }
          throw e;
        }
      }
      try (PreparedStatement ps = c.prepareStatement(q.update)) {
        ps.setLong(1, newVersion);
        ps.setLong(2, expiresAtMicros);
        ps.setString(3, value);
        ps.setString(4, partition);
        ps.setString(5, id);
        ps.setLong(6, expectedVersion);
        return ps.executeUpdate() == 1;
      }
    });
  }

  @Override public List<StoredRecord> list(String partition, String afterId, int limit, long deadlineNanos) {
    if (limit < 1) {
      throw new IllegalArgumentException("limit " + limit + " is not positive; ask for at least one record");
    }
    return call(deadlineNanos, "list", (c, q) -> {
      try (PreparedStatement ps = c.prepareStatement(afterId == null ? q.listFirst : q.listAfter)) {
        int i = 1;
        ps.setString(i++, partition);
        if (afterId != null) {
          ps.setString(i++, afterId);
        }
        if (q.dialect == Dialect.GENERIC) {
          ps.setMaxRows(limit);
        } else {
          ps.setInt(i, limit);
        }
        List<StoredRecord> page = new ArrayList<>(Math.min(limit, 256));
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next() && page.size() < limit) {
            page.add(Sql.record(rs));
          }
        }
        return page;
      }
    });
  }

  @Override public boolean deleteIfVersion(String partition, String id, long expectedVersion, long deadlineNanos) {
    return call(deadlineNanos, "delete", (c, q) -> {
      try (PreparedStatement ps = c.prepareStatement(q.delete)) {
        ps.setString(1, partition);
        ps.setString(2, id);
        ps.setLong(3, expectedVersion);
        return ps.executeUpdate() == 1;
      }
    });
  }

  // ---------------------------------------------------------------------------------------------
  // One call: a connection, a deadline, one statement.
  // ---------------------------------------------------------------------------------------------

  @FunctionalInterface
  private interface Work<T> {
    T run(Connection c, Sql q) throws SQLException;
  }

  /** One call: its work on the executor, waited for until the deadline ({@link DeadlineTask}). */
  private <T> T call(long deadlineNanos, String what, Work<T> work) {
    if (deadlineNanos - System.nanoTime() <= 0) {
      throw new StoreTimeoutException(what + " on " + table + ": the deadline passed before the call");
    }
    ConnectionWait wait = new ConnectionWait();
    int networkMillis = ConnectionGate.networkTimeoutMillis(deadlineNanos - System.nanoTime());
    try {
      return DeadlineTask.submit(executor, deadlineNanos, wait::abandon,
          () -> onWorker(deadlineNanos, wait, networkMillis, what, work)).await();
    } catch (TimeoutException e) {
      throw new StoreTimeoutException(what + " on " + table + " did not complete by its deadline", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StoreException(what + " on " + table + ": interrupted while waiting for it", e);
    } catch (RuntimeException e) {
      throw e; // what onWorker threw: a StoreException, or a programmer error
    } catch (Exception e) {
      throw new StoreException(what + " on " + table + " failed: " + e.getMessage(), e);
    }
  }

  /**
   * One statement on a connection from the store's gate ({@link ConnectionGate}), with the gate's
   * network timeout; on the worker. A failure that says the store was lost closes the gate: the
   * next calls are answered at once as not reached until its probe reaches the store again, which
   * brings the engine back as soon as the store is (a pool left to itself retries a lost server with
   * a back-off of up to 5 s).
   */
  private <T> T onWorker(long deadlineNanos, ConnectionWait wait, int networkMillis, String what, Work<T> work) {
    Connection c;
    try {
      c = gate.borrow(dataSource, wait, deadlineNanos, networkMillis);
    } catch (StoreNotReachedException e) {
      throw new StoreNotReachedException(what + " on " + table + " failed: nothing sent: " + e.getMessage(), e.getCause());
    } catch (SQLException e) {
      throw failure(what, e, deadlineNanos, networkMillis);
    }
    try (c) {
      int previous = c.getNetworkTimeout();
      c.setNetworkTimeout(DIRECT, networkMillis);
      try {
        T result = work.run(c, sql(c));
        if (!c.getAutoCommit()) {
          c.commit();
        }
        return result;
      } catch (SQLException | RuntimeException e) {
        if (!c.isClosed() && !c.getAutoCommit()) {
          try {
            c.rollback();
          } catch (SQLException suppressed) {
            e.addSuppressed(suppressed);
          }
        }
        throw e;
      } finally {
        if (!c.isClosed()) {
          c.setNetworkTimeout(DIRECT, previous);
        }
      }
    } catch (SQLException e) {
      throw failure(what, e, deadlineNanos, networkMillis);
    }
  }

  /** What a failed call throws ({@link SqlFailure}); a failure that says the store was lost also closes the gate. */
  private StoreException failure(String what, SQLException e, long deadlineNanos, int networkMillis) {
    gate.failed(dataSource, e, networkMillis);
    if (SqlFailure.reason(e) == Reason.TIMEOUT || deadlineNanos - System.nanoTime() <= 0) {
      return new StoreTimeoutException(what + " on " + table + " did not complete by its deadline: " + e.getMessage(), e);
    }
    return new StoreException(what + " on " + table + " failed: " + e.getMessage(), e);
  }

  private Sql sql(Connection c) throws SQLException {
    Sql q = sql;
    if (q == null) {
      q = new Sql(dialect(c), table);
      sql = q;
    }
    return q;
  }

  private Dialect dialect(Connection c) throws SQLException {
    Dialect d = dialect;
    if (d == null) {
      d = Dialect.of(c.getMetaData().getDatabaseProductName());
      dialect = d;
    }
    return d;
  }

  private static boolean isUniqueViolation(SQLException e) {
    return e instanceof SQLIntegrityConstraintViolationException
        || (e.getSQLState() != null && e.getSQLState().startsWith("23"));
  }

  /**
   * Values are printable ASCII of at most 255 characters (the SPI's promise, and the column type); checked
   * here because MariaDB's {@code INSERT IGNORE} would store an unfit value mangled instead of failing.
   */
  private static void checkValue(String value) {
    if (value == null || value.isEmpty() || value.length() > MAX_VALUE_LENGTH) {
      throw new IllegalArgumentException("value of " + (value == null ? "null" : value.length() + " characters")
          + " is outside 1.." + MAX_VALUE_LENGTH + " characters");
    }
    for (int i = 0, n = value.length(); i < n; i++) {
      char ch = value.charAt(i);
      if (ch < 0x20 || ch > 0x7e) {
        throw new IllegalArgumentException("value has character 0x" + Integer.toHexString(ch) + " at index " + i
            + "; values are printable ASCII (0x20..0x7e)");
      }
    }
  }

  private static String checkTable(String table) {
    if (!TableNames.isPlain(table)) {
      throw new IllegalArgumentException("table name " + (table == null ? "null" : "\"" + table + "\"")
          + " is not a plain SQL identifier; use letters, digits and '_' (optionally schema.table), at most 63 each");
    }
    return table;
  }

  /** Stops the store's own executor (a supplied executor and the DataSource are the caller's). */
  @Override public void close() {
    if (ownExecutor != null) {
      ownExecutor.shutdown();
    }
  }

  @Override public String toString() {
    return "JdbcVersionedStore[table=" + table + ", dialect=" + dialect + "]";
  }

  /** The statements of one dialect and table, built once. */
  private static final class Sql {
    /** What read and list select, and {@link #record} reads. */
    static final String COLUMNS = "record_id, version, expires_at, state";

    final Dialect dialect;
    final String read;
    final String insert;
    final String update;
    final String listFirst;
    final String listAfter;
    final String delete;

    Sql(Dialect d, String t) {
      dialect = d;
      String select = "SELECT " + COLUMNS + " FROM " + t + " WHERE partition_id = ?";
      read = select + " AND record_id = ?";
      String columns = " (partition_id, record_id, version, expires_at, state) VALUES (?, ?, ?, ?, ?)";
      insert = switch (d) {
        case POSTGRESQL -> "INSERT INTO " + t + columns + " ON CONFLICT (partition_id, record_id) DO NOTHING";
        // IGNORE also downgrades data errors to warnings; the values are validated hex, ASCII and bigints.
        case MARIADB -> "INSERT IGNORE INTO " + t + columns;
        case GENERIC -> "INSERT INTO " + t + columns;
      };
      update = "UPDATE " + t + " SET version = ?, expires_at = ?, state = ?"
          + " WHERE partition_id = ? AND record_id = ? AND version = ?";
      String limit = d == Dialect.GENERIC ? "" : " LIMIT ?";
      listFirst = select + " ORDER BY record_id" + limit;
      listAfter = select + " AND record_id > ? ORDER BY record_id" + limit;
      delete = "DELETE FROM " + t + " WHERE partition_id = ? AND record_id = ? AND version = ?";
    }

    /** The record at the result's current row of read or list. */
    static StoredRecord record(ResultSet rs) throws SQLException {
      return new StoredRecord(rs.getString("record_id"), rs.getString("state"), rs.getLong("version"), rs.getLong("expires_at"));
    }
  }

  /** Builds a {@link JdbcVersionedStore}; nothing touches the database until the first call. */
  public static final class Builder {
    private final DataSource dataSource;
    private String table = DEFAULT_TABLE;
    private Dialect dialect;
    private Executor executor;

    private Builder(DataSource dataSource) {
      if (dataSource == null) {
        throw new IllegalArgumentException("dataSource is null");
      }
      this.dataSource = dataSource;
    }

    /** The table (optionally {@code schema.table}); default {@value JdbcVersionedStore#DEFAULT_TABLE}. */
    public Builder table(String table) {
      this.table = checkTable(table);
      return this;
    }

    /** The SQL dialect; default: detected from the database's product name on first use. */
    public Builder dialect(Dialect dialect) {
      if (dialect == null) {
        throw new IllegalArgumentException("dialect is null");
      }
      this.dialect = dialect;
      return this;
    }

    /**
     * Runs the JDBC work of every call on {@code executor}; the caller waits at most its deadline.
     * Default: the store's own pool of 16 daemon threads, stopped by
     * {@link JdbcVersionedStore#close()}. Size it like the connection pool; it must not run tasks on
     * the calling thread, or the deadline cannot be held.
     */
    public Builder executor(Executor executor) {
      if (executor == null) {
        throw new IllegalArgumentException("executor is null");
      }
      this.executor = executor;
      return this;
    }

    public JdbcVersionedStore build() {
      return new JdbcVersionedStore(this);
    }
  }
}
