package dev.sluice.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Ticker;
import dev.sluice.internal.StoredId;
import dev.sluice.store.SweepResult;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Sweep, malformed rows, per-account overrides and what the table stores, on the shared server. */
class PostgresSweepAndStorageTest {
  @RegisterExtension static final PostgresTable db = new PostgresTable(4);
  static final List<String> owned = new java.util.concurrent.CopyOnWriteArrayList<>();

  @AfterAll static void dropOwnTables() {
    owned.forEach(t -> PostgresTestSupport.drop(PostgresTestSupport.URL, t));
  }

  private static JdbcRateLimiter limiter(Policy p, Ticker t) {
    return limiter(p, t, db.table());
  }

  private static JdbcRateLimiter limiter(Policy p, Ticker t, String table) {
    return JdbcRateLimiter.builder(p, db.ds()).table(table).ticker(t).timeout(Duration.ofSeconds(10)).build();
  }

  /** Sweeps see the whole table: each sweep test gets a table of its own. */
  private static String ownTable() throws SQLException {
    String own = PostgresTestSupport.tableName();
    owned.add(own);
    JdbcRateLimiter.builder(Policy.fixedWindow("schema", 1, Duration.ofSeconds(1)), db.ds()).table(own).build().applySchema();
    return own;
  }

  @Test
  void sweepDeletesExpiredRowsKeepsMalformedOnesAndTheyFailClosed() throws Exception {
    ManualTicker t = ManualTicker.at(1_800_000_000_000_000L);
    Policy p = Policy.fixedWindow(PostgresTestSupport.name("sweep"), 5, Duration.ofSeconds(1));
    String own = ownTable();
    try (JdbcRateLimiter l = limiter(p, t, own);
         JdbcRateLimiter open = JdbcRateLimiter.builder(p, db.ds()).table(own).ticker(t)
             .failureMode(FailureMode.open((pol, r, e) -> { })).build()) {
      for (String k : List.of("a", "b", "c", "bad")) {
        assertThat(l.tryAcquire(k).allowed()).isTrue();
      }
      corrupt(own, p, "bad", "s1 = -1");
      t.advance(Duration.ofSeconds(5));
      assertThat(l.tryAcquire("live").allowed()).isTrue(); // expires 1 s from now
      t.advance(Duration.ofMillis(100));

      SweepResult r = l.sweep(2);
      assertThat(r.deleted()).isEqualTo(3);
      assertThat(r.malformed()).isEqualTo(1);
      assertThat(r.malformedIds()).singleElement().asString().matches("[^/]+/[^/]+");
      assertThat(r.changed()).isZero();
      assertThat(r.scanned()).as("the four expired rows, read two at a time; the live one is never read").isEqualTo(4);
      assertThat(r.live()).isZero();
      assertThat(rows(own, p)).isEqualTo(2); // "live" and "bad"

      for (JdbcRateLimiter any : List.of(l, open)) {
        Decision d = any.tryAcquire("bad");
        assertThat(d.allowed()).as("a malformed row fails closed, whatever the failure mode").isFalse();
        assertThat(d.reason()).isEqualTo(Reason.CORRUPT_STATE);
        assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
        assertThat(any.peek("bad").reason()).isEqualTo(Reason.CORRUPT_STATE);
      }
      corrupt(own, p, "bad", "s1 = 0, alg = 9");
      assertThat(l.tryAcquire("bad").reason()).isEqualTo(Reason.CORRUPT_STATE);
      assertThat(l.sweep().malformed()).isEqualTo(1);
      assertThat(rows(own, p)).isEqualTo(2);

      // reset is the way out of a corrupt row
      l.reset("bad");
      assertThat(l.tryAcquire("bad").reason()).isEqualTo(Reason.WITHIN_LIMIT);
    }
  }

  /**
   * Issue 14, finding 11: a pinned row with an invalid configuration was kept (as every pinned row is)
   * but not counted as malformed, so a sweep reported a clean table that fails a key closed.
   */
  @Test
  void sweepKeptPinnedRowsWithAnInvalidConfigurationWithoutCountingThem() throws Exception {
    ManualTicker t = ManualTicker.at(1_800_000_000_000_000L);
    Policy p = Policy.fixedWindow(PostgresTestSupport.name("pinned-bad"), 5, Duration.ofSeconds(1));
    String own = ownTable();
    try (JdbcRateLimiter l = limiter(p, t, own)) {
      l.override("vip", Policy.fixedWindow(p.name(), 50, Duration.ofSeconds(1)));
      l.override("fine", Policy.fixedWindow(p.name(), 50, Duration.ofSeconds(1)));
      assertThat(l.tryAcquire("vip").allowed()).isTrue();
      corrupt(own, p, "vip", "p2 = 1"); // a window of 1 us: no policy has it
      t.advance(Duration.ofSeconds(5));
      SweepResult r = l.sweep();
      assertThat(r.malformed()).as("the pinned row with an invalid configuration").isEqualTo(1);
      assertThat(r.deleted()).isZero();
      assertThat(rows(own, p)).as("both pinned rows are kept").isEqualTo(2);
      assertThat(l.tryAcquire("vip").reason()).isEqualTo(Reason.CORRUPT_STATE);
    }
  }

  /**
   * Issue 14, finding 11: a GCRA row with {@code s0 = 9e15} locked its key until the year 2255. A
   * state further ahead than its policy writes, beyond Checks.CLOCK_TOLERANCE_MICROS, fails closed.
   */
  @Test
  void stateFromTheFarFutureWasTrusted() throws Exception {
    ManualTicker t = ManualTicker.at(1_800_000_000_000_000L);
    Policy p = Policy.gcra(PostgresTestSupport.name("future"), 10, Duration.ofSeconds(1), 5);
    String own = ownTable(); // the other tests sweep the shared table
    try (JdbcRateLimiter l = limiter(p, t, own)) {
      for (String k : List.of("beyond-word", "a-day-ahead", "in-tolerance")) {
        assertThat(l.tryAcquire(k).allowed()).isTrue();
      }
      corrupt(own, p, "beyond-word", "s0 = 9000000000000000");
      corrupt(own, p, "a-day-ahead", "s0 = " + (t.nowMicros() + 86_400_000_000L));
      corrupt(own, p, "in-tolerance", "s0 = " + (t.nowMicros() + 1_800_000_000L));
      for (String k : List.of("beyond-word", "a-day-ahead")) {
        assertThat(l.tryAcquire(k).reason()).as(k).isEqualTo(Reason.CORRUPT_STATE);
        assertThat(l.peek(k).reason()).as(k).isEqualTo(Reason.CORRUPT_STATE);
      }
      Decision d = l.tryAcquire("in-tolerance");
      assertThat(d.reason()).isEqualTo(Reason.LIMIT_EXCEEDED);
      assertThat(d.retryAfter()).isGreaterThan(Duration.ofMinutes(29));
    }
  }

  @Test
  void aRowWrittenBetweenTheSweepsReadAndDeleteSurvives() throws Exception {
    ManualTicker t = ManualTicker.at(1_800_000_000_000_000L);
    Policy p = Policy.tokenBucket(PostgresTestSupport.name("sweep-race"), 3, 3, Duration.ofSeconds(1));
    String own = ownTable();
    try (JdbcRateLimiter l = limiter(p, t, own)) {
      l.tryAcquire("written-meanwhile", 3);
      l.tryAcquire("idle", 3);
      t.advance(Duration.ofSeconds(2));
      AtomicInteger hooks = new AtomicInteger();
      SweepResult r = l.sweep(100, () -> {
        if (hooks.getAndIncrement() == 0) {
          assertThat(l.tryAcquire("written-meanwhile", 2).allowed()).isTrue();
        }
      });
      assertThat(r.deleted()).isEqualTo(1);
      assertThat(r.changed()).isEqualTo(1);
      assertThat(rows(own, p)).isEqualTo(1);
      assertThat(l.peek("written-meanwhile").remaining()).as("the decision made during the sweep kept its count").isEqualTo(1);
    }
  }

  @Test
  void theSchemaCarriesItsVersionAFillfactorAndOnlyThePrimaryKeyIndex() throws Exception {
    JdbcRateLimiter l = JdbcRateLimiter.builder(Policy.fixedWindow("v", 1, Duration.ofSeconds(1)), db.ds()).table(db.table()).build();
    assertThat(l.schemaVersion()).isEqualTo(JdbcRateLimiter.SCHEMA_VERSION).isEqualTo(1);
    l.applySchema(); // idempotent
    assertThat(JdbcRateLimiter.builder(Policy.fixedWindow("v", 1, Duration.ofSeconds(1)), db.ds()).table(db.table() + "_absent").build()
        .schemaVersion()).isZero();
    try (Connection c = db.ds().getConnection(); Statement s = c.createStatement()) {
      try (ResultSet rs = s.executeQuery("SELECT reloptions::text FROM pg_class WHERE oid = to_regclass('" + db.table() + "')")) {
        rs.next();
        assertThat(rs.getString(1)).isEqualTo("{fillfactor=70}");
      }
      try (ResultSet rs = s.executeQuery("SELECT count(*), bool_and(indisprimary) FROM pg_index WHERE indrelid = to_regclass('" + db.table() + "')")) {
        rs.next();
        assertThat(rs.getLong(1)).isEqualTo(1);
        assertThat(rs.getBoolean(2)).isTrue();
      }
    }
  }

  @Test
  void theTableHoldsNoRawKeyOrPolicyName() throws Exception {
    String policyName = PostgresTestSupport.name("raw-policy-name");
    String key = "raw-key-" + System.nanoTime() + "@example.com";
    Policy p = Policy.gcra(policyName, 10, Duration.ofSeconds(1), 5);
    try (JdbcRateLimiter l = JdbcRateLimiter.builder(p, db.ds()).table(db.table()).build()) {
      assertThat(l.tryAcquire(key).allowed()).isTrue();
      l.override(key + "-vip", p);
      l.tryAcquire(key, 1, Policy.fixedWindow(policyName + "-other", 3, Duration.ofMinutes(1)));
    }
    int scanned = 0;
    try (Connection c = db.ds().getConnection(); Statement s = c.createStatement();
         ResultSet rs = s.executeQuery("SELECT t::text, policy_id, key_id FROM " + db.table() + " t")) {
      while (rs.next()) {
        scanned++;
        String row = rs.getString(1);
        assertThat(row).doesNotContain(key).doesNotContain(policyName).doesNotContain("raw-key").doesNotContain("raw-policy");
        assertThat(rs.getString(2)).matches("[0-9a-f]{64}");
        assertThat(rs.getString(3)).matches("[0-9a-f]{64}");
      }
    }
    assertThat(scanned).isGreaterThanOrEqualTo(3);
    assertThat(rows(p)).isEqualTo(2);
  }

  @Test
  void anOverrideChangesALiveAccountAndLaterCallsNeverRevertIt() throws Exception {
    ManualTicker t = ManualTicker.at(1_800_000_000_000_000L);
    Policy standard = Policy.tokenBucket(PostgresTestSupport.name("account"), 5, 5, Duration.ofMinutes(1));
    Policy vip = Policy.tokenBucket(standard.name(), 50, 50, Duration.ofMinutes(1));
    try (JdbcRateLimiter l = limiter(standard, t); JdbcRateLimiter otherInstance = limiter(standard, t)) {
      Decision first = l.tryAcquire("acct-1");
      assertThat(first.limit()).as("the first call provisions from the default policy").isEqualTo(5);
      assertThat(first.remaining()).isEqualTo(4);

      l.override("acct-1", vip);
      Decision d = l.tryAcquire("acct-1");
      assertThat(d.limit()).isEqualTo(50);
      assertThat(d.remaining()).as("the count is kept: same algorithm, same period").isEqualTo(3);
      assertThat(d.policy()).isEqualTo(vip);
      for (int i = 0; i < 10; i++) {
        assertThat(otherInstance.tryAcquire("acct-1").limit()).as("a call with the default policy never reverts it").isEqualTo(50);
      }
      t.advance(Duration.ofMinutes(10)); // long past the bucket's refill: the override is configuration, not state
      assertThat(l.sweep().deleted()).isZero();
      assertThat(l.tryAcquire("acct-1").remaining()).isEqualTo(49);
      l.reset("acct-1");
      // Permits are validated against the caller's policy; pass the override's to ask for more than the default.
      Decision afterReset = l.tryAcquire("acct-1", 7, vip);
      assertThat(afterReset.allowed()).as("reset keeps the override and clears the count").isTrue();
      assertThat(afterReset.remaining()).isEqualTo(43);

      // another algorithm entirely: the caller's token bucket is decided by the pinned fixed window
      Policy window = Policy.fixedWindow(standard.name(), 2, Duration.ofMinutes(1));
      l.override("acct-2", window); // an account with no row yet is provisioned pinned
      assertThat(l.tryAcquire("acct-2").remaining()).isEqualTo(1);
      assertThat(l.tryAcquire("acct-2").remaining()).isZero();
      Decision refused = l.tryAcquire("acct-2");
      assertThat(refused.allowed()).isFalse();
      assertThat(refused.reason()).isEqualTo(Reason.LIMIT_EXCEEDED);
      assertThat(refused.policy()).isEqualTo(window);

      assertThat(l.clearOverride("acct-1", standard)).isTrue();
      assertThat(l.tryAcquire("acct-1").limit()).isEqualTo(5);
      assertThat(l.clearOverride("acct-1", standard)).isFalse();
    }
  }

  private static void corrupt(Policy p, String key, String set) throws SQLException {
    corrupt(db.table(), p, key, set);
  }

  private static void corrupt(String table, Policy p, String key, String set) throws SQLException {
    try (Connection c = db.ds().getConnection(); Statement s = c.createStatement()) {
      int n = s.executeUpdate("UPDATE " + table + " SET " + set + " WHERE key_id = '" + StoredId.key(p.name(), key) + "'");
      assertThat(n).isEqualTo(1);
    }
  }

  private static long rows(Policy p) throws SQLException {
    return rows(db.table(), p);
  }

  private static long rows(String table, Policy p) throws SQLException {
    try (Connection c = db.ds().getConnection(); Statement s = c.createStatement();
         ResultSet rs = s.executeQuery("SELECT count(*) FROM " + table + " WHERE policy_id = '" + StoredId.policy(p.name()) + "'")) {
      rs.next();
      return rs.getLong(1);
    }
  }

}
