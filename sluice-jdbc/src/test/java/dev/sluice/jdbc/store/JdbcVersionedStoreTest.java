package dev.sluice.jdbc.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Ticker;
import dev.sluice.internal.StoredId;
import dev.sluice.jdbc.store.JdbcVersionedStore.Dialect;
import dev.sluice.spi.StoreException;
import dev.sluice.spi.StoreTimeoutException;
import dev.sluice.spi.VersionedStore;
import dev.sluice.store.SweepResult;
import dev.sluice.store.VersionedStoreRateLimiter;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The JDBC store on both servers: schema, sweep and corrupt rows, deadlines, outages. */
class JdbcVersionedStoreTest {
  static final long T0 = 1_767_225_600_000_000L;

  static Stream<String> databases() {
    return Stream.of("postgres", "mariadb");
  }

  static DataSource db(String name) {
    return name.equals("postgres") ? JdbcVersionedStoreDatabases.postgres() : JdbcVersionedStoreDatabases.mariadb();
  }

  static String randomPolicyName() {
    return "vs-" + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffffffL);
  }

  @Test
  void theDdlOfEachDialectNamesTheTableAndTheBuilderChecksIt() {
    assertThat(JdbcVersionedStore.ddl(Dialect.POSTGRESQL, "app.limits"))
        .startsWith("-- Sluice versioned store, PostgreSQL.")
        .contains("CREATE TABLE IF NOT EXISTS app.limits (", "COLLATE \"C\"", "PRIMARY KEY (partition_id, record_id)")
        .doesNotContain("${table}");
    assertThat(JdbcVersionedStore.ddl(Dialect.MARIADB, "limits")).contains("CREATE TABLE IF NOT EXISTS limits (", "ascii_bin",
        "ENGINE=InnoDB");
    assertThat(JdbcVersionedStore.ddl(Dialect.GENERIC, "limits")).contains("CREATE TABLE limits (");
    assertThat(Dialect.of("PostgreSQL")).isEqualTo(Dialect.POSTGRESQL);
    assertThat(Dialect.of("MariaDB")).isEqualTo(Dialect.MARIADB);
    assertThat(Dialect.of("MySQL")).isEqualTo(Dialect.MARIADB);
    assertThat(Dialect.of("H2")).isEqualTo(Dialect.GENERIC);
    for (String bad : new String[] {"limits; DROP TABLE x", "1limits", "a.b.c", "", "lim-its", "\"quoted\""}) {
      assertThatThrownBy(() -> JdbcVersionedStore.builder(new NoDataSource()).table(bad))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("table name \"" + bad + "\" is not a plain SQL identifier; use letters, digits and '_' "
              + "(optionally schema.table), at most 63 each");
    }
    assertThatThrownBy(() -> JdbcVersionedStore.builder(null)).hasMessage("dataSource is null");
    assertThatThrownBy(() -> JdbcVersionedStore.builder(new NoDataSource()).executor(null)).hasMessage("executor is null");
  }

  @ParameterizedTest @MethodSource("databases")
  void rowsHoldHashesAndTheDocumentedStateNeverTheKey(String name) throws Exception {
    DataSource ds = db(name);
    JdbcVersionedStore store = JdbcVersionedStoreDatabases.store(ds, JdbcVersionedStoreDatabases.TEST_TABLE);
    String policy = randomPolicyName();
    VersionedStoreRateLimiter limiter = VersionedStoreRateLimiter.builder(Policy.fixedWindow(policy, 5, Duration.ofMinutes(1)), store)
        .ticker(ManualTicker.at(T0)).build();
    assertThat(limiter.tryAcquire("alice@example.com", 2).remaining()).isEqualTo(3);
    try (Connection c = ds.getConnection();
         PreparedStatement ps = c.prepareStatement("SELECT record_id, version, expires_at, state FROM "
             + JdbcVersionedStoreDatabases.TEST_TABLE + " WHERE partition_id = ?")) {
      ps.setString(1, StoredId.policy(policy));
      try (ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getString(1)).isEqualTo(StoredId.key(policy, "alice@example.com"));
        assertThat(rs.getLong(2)).isPositive();
        assertThat(rs.getLong(3)).isEqualTo(T0 + 60_000_000L);
        assertThat(rs.getString(4)).isEqualTo("s1|fixed-window|" + T0 + "|2|0|" + T0);
        assertThat(rs.next()).isFalse();
      }
    }
  }

  @ParameterizedTest @MethodSource("databases")
  void sweepDeletesExpiredRowsKeepsLiveAndMalformedOnesAndCorruptRowsFailClosed(String name) throws Exception {
    DataSource ds = db(name);
    JdbcVersionedStore store = JdbcVersionedStoreDatabases.store(ds, JdbcVersionedStoreDatabases.TEST_TABLE);
    String policyName = randomPolicyName();
    Policy p = Policy.tokenBucket(policyName, 3, 1, Duration.ofSeconds(1));
    ManualTicker ticker = ManualTicker.at(T0);
    VersionedStoreRateLimiter limiter = VersionedStoreRateLimiter.builder(p, store).ticker(ticker)
        .failureMode(FailureMode.open((pol, r, c) -> {})).build();
    for (int i = 0; i < 300; i++) {
      limiter.tryAcquire("old-" + i, 3); // empty buckets: full again 3 s later
    }
    ticker.advance(Duration.ofSeconds(2));
    for (int i = 0; i < 10; i++) {
      limiter.tryAcquire("new-" + i, 3);
    }
    String partition = StoredId.policy(policyName);
    String broken = StoredId.key(policyName, "broken");
    String hostile = StoredId.key(policyName, "hostile");
    try (Connection c = ds.getConnection();
         PreparedStatement ps = c.prepareStatement("INSERT INTO " + JdbcVersionedStoreDatabases.TEST_TABLE
             + " (partition_id, record_id, version, expires_at, state) VALUES (?, ?, ?, ?, ?)")) {
      for (String[] row : new String[][] {{broken, "s1|token-bucket|1|x|0|1"}, {hostile, "s1|token-bucket|1|4503599627370497|0|1"}}) {
        ps.setString(1, partition);
        ps.setString(2, row[0]);
        ps.setLong(3, 9);
        ps.setLong(4, 1);
        ps.setString(5, row[1]);
        ps.executeUpdate();
      }
    }
    Decision d = limiter.tryAcquire("broken");
    assertThat(d.allowed()).as("corrupt state fails closed even under the open mode").isFalse();
    assertThat(d.reason()).isEqualTo(Reason.CORRUPT_STATE);
    assertThat(limiter.tryAcquire("hostile").reason()).isEqualTo(Reason.CORRUPT_STATE);

    ticker.advance(Duration.ofMillis(1_500)); // T0 + 3.5 s: old-* are full again, new-* are not
    SweepResult r = limiter.sweep();
    assertThat(r.scanned()).isEqualTo(312);
    assertThat(r.deleted()).isEqualTo(300);
    assertThat(r.live()).isEqualTo(10);
    assertThat(r.malformed()).isEqualTo(2);
    assertThat(r.malformedIds()).containsExactlyInAnyOrder(broken, hostile);
    assertThat(store.list(partition, null, 1_000, System.nanoTime() + TimeUnit.SECONDS.toNanos(5))).hasSize(12);
    assertThat(limiter.tryAcquire("broken").reason()).isEqualTo(Reason.CORRUPT_STATE);
    limiter.reset("broken");
    assertThat(limiter.tryAcquire("broken").allowed()).isTrue();
    assertThat(limiter.peek("new-3").remaining()).isLessThan(3);
  }

  @ParameterizedTest @MethodSource("databases")
  void aWriteBlockedByALockTimesOutAtItsDeadline(String name) throws Exception {
    DataSource ds = db(name);
    JdbcVersionedStore store = JdbcVersionedStoreDatabases.store(ds, JdbcVersionedStoreDatabases.TEST_TABLE);
    String policyName = randomPolicyName();
    Policy p = Policy.fixedWindow(policyName, 10, Duration.ofMinutes(1));
    VersionedStoreRateLimiter limiter = VersionedStoreRateLimiter.builder(p, store).ticker(ManualTicker.at(T0))
        .timeout(Duration.ofMillis(300)).build();
    assertThat(limiter.tryAcquire("locked").allowed()).isTrue();
    String partition = StoredId.policy(policyName);
    String id = StoredId.key(policyName, "locked");
    long version = store.read(partition, id, System.nanoTime() + TimeUnit.SECONDS.toNanos(5)).version();
    try (Connection holder = ds.getConnection()) {
      holder.setAutoCommit(false);
      try (PreparedStatement ps = holder.prepareStatement("SELECT version FROM " + JdbcVersionedStoreDatabases.TEST_TABLE
          + " WHERE partition_id = ? AND record_id = ? FOR UPDATE")) {
        ps.setString(1, partition);
        ps.setString(2, id);
        ps.executeQuery().close();
      }
      long t0 = System.nanoTime();
      Decision d = limiter.tryAcquire("locked");
      long took = System.nanoTime() - t0;
      assertThat(d.allowed()).isFalse();
      assertThat(d.reason()).isEqualTo(Reason.TIMEOUT);
      assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
      assertThat(took).as("the decision waited about its 300 ms deadline").isLessThan(TimeUnit.MILLISECONDS.toNanos(1_500));

      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(200);
      assertThatThrownBy(() -> store.compareAndSet(partition, id, version, "x", version + 1, 0, deadline))
          .isInstanceOf(StoreTimeoutException.class);
      assertThat(System.nanoTime() - deadline).isLessThan(TimeUnit.MILLISECONDS.toNanos(1_000));
      holder.rollback();
    }
    // The pool recovered: the next decision goes through.
    assertThat(limiter.tryAcquire("locked").allowed()).isTrue();
  }

  @Test
  void anUnreachableDatabaseIsStoreUnavailableUnderTheFailureMode() {
    DataSource nowhere = new UrlDataSource("jdbc:postgresql://127.0.0.1:1/none?user=postgres&connectTimeout=1");
    VersionedStore store = JdbcVersionedStore.builder(nowhere).dialect(Dialect.POSTGRESQL).build();
    Policy p = Policy.gcra(randomPolicyName(), 5, Duration.ofSeconds(1), 5);
    for (FailureMode mode : List.of(FailureMode.closed(), FailureMode.open((pol, r, c) -> {}))) {
      Decision d = VersionedStoreRateLimiter.builder(p, store).ticker(ManualTicker.at(T0)).failureMode(mode).build().tryAcquire("k");
      assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
      assertThat(d.allowed()).isEqualTo(mode instanceof FailureMode.Open);
      assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
    }
    assertThatThrownBy(() -> store.read(StoredId.policy("x"), StoredId.key("x", "k"), System.nanoTime() + 1_000_000_000L))
        .isInstanceOf(StoreException.class).hasMessageStartingWith("read on sluice_store failed: ");
  }

  /** A DataSource for builder checks that must never be used. */
  static final class NoDataSource extends UrlDataSource {
    NoDataSource() {
      super(null);
    }

    @Override public Connection getConnection() { throw new AssertionError("not used"); }
  }

  /** A DataSource over DriverManager, unpooled. */
  static class UrlDataSource implements DataSource {
    private final String url;

    UrlDataSource(String url) {
      this.url = url;
    }

    @Override public Connection getConnection() throws java.sql.SQLException { return java.sql.DriverManager.getConnection(url); }
    @Override public Connection getConnection(String u, String p) throws java.sql.SQLException { return getConnection(); }
    @Override public java.io.PrintWriter getLogWriter() { return null; }
    @Override public void setLogWriter(java.io.PrintWriter out) {}
    @Override public void setLoginTimeout(int seconds) {}
    @Override public int getLoginTimeout() { return 0; }
    @Override public java.util.logging.Logger getParentLogger() { return null; }
    @Override public <T> T unwrap(Class<T> iface) { return null; }
    @Override public boolean isWrapperFor(Class<?> iface) { return false; }
  }
}
