package dev.sluice.server;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.jdbc.JdbcRateLimiter;
import dev.sluice.store.SweepResult;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.function.Function;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Counts in PostgreSQL ({@code sluice-jdbc}): one statement per decision over a HikariCP pool, time
 * from the database server. The table is created if absent (idempotent DDL) when the service starts,
 * and expired rows are swept periodically. An unreachable database does not stop the service from
 * starting: decisions follow the failure mode until it answers, and the schema is applied then.
 */
final class PostgresStore extends Store {
  private static final System.Logger LOG = System.getLogger(PostgresStore.class.getName());
  private static final int POOL_SIZE = 16;

  private final String url;
  private final String table;
  private final Function<Policy, FailureMode> failureModes;
  private final Duration timeout;
  private final HikariDataSource dataSource;
  private final ExecutorService statements;
  private final ScheduledExecutorService sweeper;
  private final List<JdbcRateLimiter> limiters = new CopyOnWriteArrayList<>();
  private volatile boolean schemaApplied;
  private int schemaAttempts; // the constructor's thread, then the sweeper's only

  PostgresStore(String url, String table, Function<Policy, FailureMode> failureModes, Duration timeout, Duration sweepInterval) {
    if (url == null || !url.startsWith("jdbc:postgresql:")) {
      throw new IllegalArgumentException("--postgres " + redact(url) + " is not a PostgreSQL JDBC URL; write e.g."
          + " jdbc:postgresql://127.0.0.1:5432/sluice?user=sluice&password=secret");
    }
    try {
      JdbcRateLimiter.ddl(table, false); // validates the name before anything connects
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("--postgres-table: " + e.getMessage());
    }
    this.url = url;
    this.table = table;
    this.failureModes = failureModes;
    this.timeout = timeout;
    HikariConfig c = new HikariConfig();
    c.setJdbcUrl(url);
    c.setPoolName("sluice-postgres");
    c.setMaximumPoolSize(POOL_SIZE);
    // Connections on demand only: below minimumIdle HikariCP retries a lost server by itself, sleeping up to 5 s
    // between attempts, and would sleep through the server's return (docs/postgresql.md, recovery).
    c.setMinimumIdle(0);
    c.setConnectionTimeout(Math.max(250, timeout.toMillis()));
    c.setInitializationFailTimeout(-1); // start even when the database is down; decisions fail per the failure mode
    this.dataSource = new HikariDataSource(c);
    AtomicInteger n = new AtomicInteger();
    this.statements = Executors.newFixedThreadPool(POOL_SIZE, r -> daemon(r, "sluice-postgres-" + n.incrementAndGet()));
    this.sweeper = Executors.newSingleThreadScheduledExecutor(r -> daemon(r, "sluice-postgres-sweep"));
    long every = Math.max(1_000, sweepInterval.toMillis());
    sweeper.scheduleWithFixedDelay(this::sweep, every, every, TimeUnit.MILLISECONDS);
  }

  @Override String name() { return "postgres"; }

  @Override String describe() {
    return "PostgreSQL at " + redact(url) + ", table " + table + " (shared by every instance)";
  }

  @Override boolean shared() { return true; }

  /** Every policy before any limiter is built: the limiter's builder refuses an algorithm a row cannot hold. */
  @Override void check(List<Policy> policies) {
    policies.forEach(p -> JdbcRateLimiter.builder(p, dataSource));
  }

  @Override RateLimiter limiter(Policy policy, RateLimitListener listener) {
    JdbcRateLimiter l = JdbcRateLimiter.builder(policy, dataSource).table(table).timeout(timeout).issuer(issuer)
        .failureMode(failureModes.apply(policy)).asyncExecutor(statements).listener(listener, false).build();
    limiters.add(l);
    if (limiters.size() == 1) {
      applySchema();
    }
    return l;
  }

  /**
   * Creates the table if absent; retried by the sweeper while the database cannot be reached. The
   * first failure is not logged: at start-up the banner's readiness probe already warns, once.
   */
  private void applySchema() {
    try {
      limiters.get(0).applySchema();
      if (schemaAttempts++ > 0) {
        LOG.log(System.Logger.Level.INFO, "applied the schema of table " + table + " now that the database answers");
      }
      schemaApplied = true;
    } catch (SQLException e) {
      if (schemaAttempts++ > 0) {
        LOG.log(System.Logger.Level.DEBUG, "cannot apply the schema of table " + table + " yet (" + e.getMessage() + ")");
      }
    }
  }

  /** A connection from the pool, validated by the driver within the store timeout. */
  @Override String probe() {
    long start = System.nanoTime();
    try (java.sql.Connection c = dataSource.getConnection()) {
      if (c.isValid((int) Math.max(1, (timeout.toMillis() + 999) / 1000))) {
        return System.nanoTime() - start > timeout.toNanos() ? "timeout" : null;
      }
      return "store_unavailable";
    } catch (SQLException | RuntimeException e) {
      return System.nanoTime() - start > timeout.toNanos() ? "timeout" : "store_unavailable";
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
    sweeper.shutdownNow();
    for (JdbcRateLimiter l : limiters) {
      l.close();
    }
    statements.shutdown();
    dataSource.close();
  }

  private static Thread daemon(Runnable r, String name) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    return t;
  }
}
