package dev.sluice.kernel;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.jdbc.JdbcRateLimiter;
import dev.sluice.store.SweepResult;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import javax.sql.DataSource;

/**
 * Counts in PostgreSQL ({@code sluice-jdbc}): a {@code JdbcRateLimiter} per policy, one statement per
 * decision, time from the database server, every policy in one table.
 *
 * <p>Two ways to open it. {@link #fromUrl} is a store of its own (the service's): a HikariCP pool, a
 * statement pool, the table created when the database first answers and expired rows swept
 * periodically; an unreachable database does not stop it from opening. {@link #onDataSource} runs on
 * an application's {@code DataSource} (the Spring starter's), optionally creating the table with the
 * first limiter, failing if it cannot.
 */
public final class PostgresStore extends Store {
  private static final System.Logger LOG = System.getLogger(PostgresStore.class.getName());
  private static final int POOL_SIZE = 16;
  /** How long a readiness probe waits when no store timeout was given. */
  private static final Duration DEFAULT_PROBE_TIMEOUT = Duration.ofSeconds(1);

  private final String where;
  private final String table;
  private final Function<Policy, FailureMode> failureModes;
  private final Duration timeout;
  private final DataSource dataSource;
  /** Set for a store of its own: its pool, statement threads and sweeper, closed with it. */
  private final HikariDataSource pool;
  private final ExecutorService statements;
  private final ScheduledExecutorService sweeper;
  /** Schema on the first limiter: retried by the sweeper (own store) or required (an application's data source). */
  private final boolean schemaRequired;
  private final boolean applySchema;
  private final List<JdbcRateLimiter> limiters = new CopyOnWriteArrayList<>();
  private volatile boolean schemaApplied;
  private int schemaAttempts; // the first limiter's thread, then the sweeper's only

  private PostgresStore(String where, String table, Function<Policy, FailureMode> failureModes, Duration timeout,
      DataSource dataSource, HikariDataSource pool, Duration sweepInterval, boolean applySchema, boolean schemaRequired) {
    this.where = where;
    this.table = table;
    this.failureModes = failureModes;
    this.timeout = timeout;
    this.dataSource = dataSource;
    this.pool = pool;
    this.applySchema = applySchema;
    this.schemaRequired = schemaRequired;
    if (pool != null) {
      AtomicInteger n = new AtomicInteger();
      this.statements = Executors.newFixedThreadPool(POOL_SIZE, r -> daemon(r, "sluice-postgres-" + n.incrementAndGet()));
      this.sweeper = Executors.newSingleThreadScheduledExecutor(r -> daemon(r, "sluice-postgres-sweep"));
      long every = Math.max(1_000, sweepInterval.toMillis());
      sweeper.scheduleWithFixedDelay(this::sweep, every, every, TimeUnit.MILLISECONDS);
    } else {
      this.statements = null;
      this.sweeper = null;
    }
  }

  /**
   * A store of its own on the PostgreSQL JDBC {@code url}: a pool of 16 connections made on demand,
   * {@code table} created if absent, expired rows swept every {@code sweepInterval} (at least 1 s).
   * A wrong URL or table name is refused as {@link #checkUrl} and {@link #checkTable} refuse it.
   */
  public static PostgresStore fromUrl(String url, String table, Function<Policy, FailureMode> failureModes,
      Duration timeout, Duration sweepInterval) {
    checkUrl(url);
    checkTable(table);
    HikariConfig c = new HikariConfig();
    c.setJdbcUrl(url);
    c.setPoolName("sluice-postgres");
    c.setMaximumPoolSize(POOL_SIZE);
    // Connections on demand only: below minimumIdle HikariCP retries a lost server by itself, sleeping up to 5 s
    // between attempts, and would sleep through the server's return (docs/postgresql.md, recovery).
    c.setMinimumIdle(0);
    c.setConnectionTimeout(Math.max(250, timeout.toMillis()));
    c.setInitializationFailTimeout(-1); // open even when the database is down; decisions fail per the failure mode
    HikariDataSource pool = new HikariDataSource(c);
    return new PostgresStore(redact(url), table, failureModes, timeout, pool, pool, sweepInterval, true, false);
  }

  /**
   * On an application's {@code dataSource}, which it keeps; with {@code applySchema} the first limiter
   * creates {@code table} if absent and a failure to is an {@link IllegalStateException}. No sweeper:
   * the application sweeps (docs/postgresql.md). {@code timeout} null keeps the limiter's default.
   */
  public static PostgresStore onDataSource(DataSource dataSource, String table, boolean applySchema,
      Function<Policy, FailureMode> failureModes, Duration timeout) {
    checkTable(table);
    return new PostgresStore("the application's DataSource", table, failureModes, timeout, dataSource, null, null,
        applySchema, true);
  }

  /**
   * Refuses a {@code url} that is not a PostgreSQL JDBC URL, with a message that starts with the
   * (redacted) URL, for a front end to prefix with its setting's name.
   */
  public static void checkUrl(String url) {
    if (url == null || !url.startsWith("jdbc:postgresql:")) {
      throw new IllegalArgumentException(redact(url) + " is not a PostgreSQL JDBC URL; write e.g."
          + " jdbc:postgresql://127.0.0.1:5432/sluice?user=sluice&password=secret");
    }
  }

  /** Refuses a table name the store cannot use, with the rule's message, before anything connects. */
  public static void checkTable(String table) {
    JdbcRateLimiter.ddl(table, false);
  }

  @Override public String name() { return "postgres"; }

  @Override public String describe() {
    return "PostgreSQL at " + where + ", table " + table + " (shared by every instance)";
  }

  @Override public boolean shared() { return true; }

  /** Every policy before any limiter is built: the limiter's builder refuses an algorithm a row cannot hold. */
  @Override public void check(List<Policy> policies) {
    policies.forEach(p -> JdbcRateLimiter.builder(p, dataSource));
  }

  @Override public RateLimiter limiter(Policy policy, RateLimitListener listener) {
    JdbcRateLimiter.Builder b = JdbcRateLimiter.builder(policy, dataSource).table(table).issuer(issuer())
        .failureMode(failureModes.apply(policy)).listener(listener, false);
    if (timeout != null) {
      b.timeout(timeout);
    }
    if (statements != null) {
      b.asyncExecutor(statements);
    }
    JdbcRateLimiter l = b.build();
    limiters.add(l);
    if (limiters.size() == 1 && applySchema) {
      applySchema();
    }
    return l;
  }

  /**
   * Creates the table if absent. A store of its own retries from the sweeper while the database cannot
   * be reached, and does not log the first failure (a startup readiness probe already warns, once).
   */
  private void applySchema() {
    try {
      limiters.get(0).applySchema();
      if (schemaAttempts++ > 0) {
        LOG.log(System.Logger.Level.INFO, "applied the schema of table " + table + " now that the database answers");
      }
      schemaApplied = true;
    } catch (SQLException e) {
      if (schemaRequired) {
        throw new IllegalStateException("creating table '" + table + "' failed: " + e.getMessage(), e);
      }
      if (schemaAttempts++ > 0) {
        LOG.log(System.Logger.Level.DEBUG, "cannot apply the schema of table " + table + " yet (" + e.getMessage() + ")");
      }
    }
  }

  /** A connection, validated by the driver within the store timeout. */
  @Override public String probe() {
    Duration wait = timeout != null ? timeout : DEFAULT_PROBE_TIMEOUT;
    long start = System.nanoTime();
    try (Connection c = dataSource.getConnection()) {
      if (c.isValid((int) Math.max(1, (wait.toMillis() + 999) / 1000))) {
        return System.nanoTime() - start > wait.toNanos() ? "timeout" : null;
      }
      return "store_unavailable";
    } catch (SQLException | RuntimeException e) {
      return System.nanoTime() - start > wait.toNanos() ? "timeout" : "store_unavailable";
    }
  }

  private void sweep() {
    if (limiters.isEmpty()) {
      return;
    }
    if (!schemaApplied) {
      applySchema();
      return;
    }
    try {
      SweepResult r = limiters.get(0).sweep();
      LOG.log(System.Logger.Level.DEBUG, "swept " + table + ": " + r);
    } catch (SQLException | RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "sweep of " + table + " failed: " + e.getMessage());
    }
  }

  @Override public void close() {
    if (sweeper != null) {
      sweeper.shutdownNow();
    }
    for (JdbcRateLimiter l : limiters) {
      close(l);
    }
    if (pool != null) {
      statements.shutdown();
      pool.close();
    }
  }

  private static Thread daemon(Runnable r, String name) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    return t;
  }
}
