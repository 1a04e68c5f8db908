package dev.sluice.jdbc.store;

import dev.sluice.testing.ManualTicker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Ticker;
import dev.sluice.internal.StoredId;
import dev.sluice.jdbc.JdbcRateLimiter;
import dev.sluice.jdbc.internal.SqlFailure;
import dev.sluice.jdbc.store.JdbcVersionedStore.Dialect;
import dev.sluice.spi.StoreException;
import dev.sluice.spi.StoreTimeoutException;
import dev.sluice.store.VersionedStoreRateLimiter;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Issue 13: the PostgreSQL limiter and the versioned store classified timeouts differently (a pool
 * that ran out of time was a TIMEOUT for one and a store failure for the other; a lock timeout, a
 * socket timeout and MariaDB's interrupted query were store failures for the limiter). Now one map,
 * {@link SqlFailure}, decides for both; these tests provoke each failure on the real servers.
 */
class SqlFailureClassificationTest {
  static final long T0 = 1_767_225_600_000_000L;

  /** The same failure on the same pool gives both backends the same reason. */
  @Test
  void theLimiterAndTheVersionedStoreClassifyATimeoutAlike() throws Exception {
    JdbcVersionedStoreDatabases.postgres(); // skip or fail when the server is unreachable
    String table = "sluice_failure_test_" + Long.toHexString(ThreadLocalRandom.current().nextLong() >>> 1);
    Policy policy = Policy.fixedWindow("failure-" + Long.toHexString(ThreadLocalRandom.current().nextLong() >>> 1), 10,
        Duration.ofMinutes(1));
    try (HikariDataSource one = pool(1, null); HikariDataSource lockTimeout = pool(2, "SET lock_timeout = '100ms'")) {
      JdbcRateLimiter.builder(policy, one).table(table).build().applySchema();
      JdbcVersionedStoreDatabases.store(one, JdbcVersionedStoreDatabases.TEST_TABLE);

      // 1. No pooled connection within the pool's 250 ms, well before the 5 s deadline.
      try (Connection held = one.getConnection()) {
        assertThat(held.isValid(1)).isTrue();
        assertThat(bothReasons(one, table, policy, "k")).containsExactly(Reason.TIMEOUT, Reason.TIMEOUT);
      }

      // 2. The row is locked by a long transaction and the session's lock_timeout (100 ms) runs out.
      assertThat(bothReasons(lockTimeout, table, policy, "locked")).containsExactly(Reason.WITHIN_LIMIT, Reason.WITHIN_LIMIT);
      try (Connection holder = DriverManager.getConnection(JdbcVersionedStoreDatabases.POSTGRES_URL);
           Statement s = holder.createStatement()) {
        holder.setAutoCommit(false);
        s.execute("SELECT 1 FROM " + table + " FOR UPDATE");
        s.execute("SELECT 1 FROM " + JdbcVersionedStoreDatabases.TEST_TABLE + " WHERE partition_id = '"
            + StoredId.policy(policy.name()) + "' FOR UPDATE");
        assertThat(bothReasons(lockTimeout, table, policy, "locked")).containsExactly(Reason.TIMEOUT, Reason.TIMEOUT);
        holder.rollback();
      }

      // 3. Nothing listens: a store failure for both, not a timeout.
      JdbcVersionedStoreTest.UrlDataSource nowhere =
          new JdbcVersionedStoreTest.UrlDataSource("jdbc:postgresql://127.0.0.1:1/none?user=postgres&connectTimeout=1");
      assertThat(bothReasons(nowhere, table, policy, "k")).containsExactly(Reason.STORE_UNAVAILABLE, Reason.STORE_UNAVAILABLE);
      JdbcVersionedStore store = JdbcVersionedStore.builder(nowhere).dialect(Dialect.POSTGRESQL).build();
      assertThatThrownBy(() -> store.read(StoredId.policy("x"), StoredId.key("x", "k"), System.nanoTime() + TimeUnit.SECONDS.toNanos(5)))
          .isInstanceOf(StoreException.class).isNotInstanceOf(StoreTimeoutException.class);
    } finally {
      try (Connection c = DriverManager.getConnection(JdbcVersionedStoreDatabases.POSTGRES_URL); Statement s = c.createStatement()) {
        s.execute("DROP TABLE IF EXISTS " + table);
      }
    }
  }

  /** Each failure the servers really produce, and its documented reason. */
  @Test
  void eachRealFailureHasItsDocumentedReason() throws Exception {
    JdbcVersionedStoreDatabases.postgres();
    JdbcVersionedStoreDatabases.mariadb();
    String pg = JdbcVersionedStoreDatabases.POSTGRES_URL;
    String maria = JdbcVersionedStoreDatabases.MARIADB_URL;

    classified(failure(pg, 0, "SET statement_timeout = '50ms'", "SELECT pg_sleep(2)"), "57014", Reason.TIMEOUT);
    classified(failure(pg, 200, "SELECT pg_sleep(2)"), "08006", Reason.TIMEOUT); // a socket timeout inside
    classified(failure(pg, 0, "SELECT 9223372036854775807::bigint + 1"), "22003", Reason.CORRUPT_STATE);
    classified(failure(pg, 0, "SELECT 1::bigint / 0"), "22012", Reason.CORRUPT_STATE);
    classified(failure(pg, 0, "SELECT * FROM sluice_no_such_table"), "42P01", Reason.STORE_UNAVAILABLE);
    classified(failure("jdbc:postgresql://127.0.0.1:1/none?user=postgres&connectTimeout=1", 0, "SELECT 1"), "08001",
        Reason.STORE_UNAVAILABLE);
    classified(failure(maria, 0, "SET SESSION max_statement_time = 0.05", "SELECT SLEEP(2)"), "70100", Reason.TIMEOUT);
    classified(failure(maria, 200, "SELECT SLEEP(2)"), "08", Reason.TIMEOUT); // a socket timeout inside
    classified(failure("jdbc:mariadb://127.0.0.1:1/none?user=root&connectTimeout=500", 0, "SELECT 1"), "08",
        Reason.STORE_UNAVAILABLE);
    String table = "sluice_failure_lock_" + Long.toHexString(ThreadLocalRandom.current().nextLong() >>> 1);
    try (Connection holder = DriverManager.getConnection(maria); Statement s = holder.createStatement()) {
      s.execute("CREATE TABLE " + table + " (id INT PRIMARY KEY) ENGINE=InnoDB");
      try {
        s.execute("INSERT INTO " + table + " VALUES (1)");
        holder.setAutoCommit(false);
        s.execute("SELECT id FROM " + table + " FOR UPDATE");
        SQLException lockWait = failure(maria, 0, "SET SESSION innodb_lock_wait_timeout = 1", "UPDATE " + table + " SET id = 1");
        assertThat(lockWait.getErrorCode()).isEqualTo(1205);
        classified(lockWait, "HY000", Reason.TIMEOUT);
        holder.rollback();
      } finally {
        holder.setAutoCommit(true);
        s.execute("DROP TABLE " + table);
      }
    }
  }

  /** The reason of a decision by the PostgreSQL limiter, then by the engine over the versioned store. */
  private static Reason[] bothReasons(javax.sql.DataSource ds, String table, Policy policy, String key) throws Exception {
    Duration deadline = Duration.ofSeconds(5);
    Reason limiter;
    try (JdbcRateLimiter l = JdbcRateLimiter.builder(policy, ds).table(table).timeout(deadline).build()) {
      limiter = l.tryAcquire(key).reason();
    }
    JdbcVersionedStore store = JdbcVersionedStore.builder(ds).table(JdbcVersionedStoreDatabases.TEST_TABLE)
        .dialect(Dialect.POSTGRESQL).build();
    Reason engine = VersionedStoreRateLimiter.builder(policy, store).ticker(ManualTicker.at(T0)).timeout(deadline).build()
        .tryAcquire(key).reason();
    return new Reason[] {limiter, engine};
  }

  private static HikariDataSource pool(int size, String initSql) {
    HikariConfig c = new HikariConfig();
    c.setJdbcUrl(JdbcVersionedStoreDatabases.POSTGRES_URL);
    c.setMaximumPoolSize(size);
    c.setMinimumIdle(0);
    c.setConnectionTimeout(250);
    c.setConnectionInitSql(initSql);
    return new HikariDataSource(c);
  }

  private static void classified(SQLException failure, String statePrefix, Reason expected) {
    assertThat(failure.getSQLState()).as(failure.toString()).startsWith(statePrefix);
    assertThat(SqlFailure.reason(failure)).as(failure.toString()).isEqualTo(expected);
  }

  /** The exception that running {@code statements} on a fresh connection to {@code url} ends in. */
  private static SQLException failure(String url, int networkTimeoutMillis, String... statements) {
    try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement()) {
      if (networkTimeoutMillis > 0) {
        c.setNetworkTimeout(Runnable::run, networkTimeoutMillis);
      }
      for (String sql : statements) {
        s.execute(sql);
      }
    } catch (SQLException e) {
      return e;
    }
    throw new AssertionError("no failure from " + String.join("; ", statements));
  }
}
