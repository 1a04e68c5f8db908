package dev.sluice.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.memory.MemoryRateLimiter;
import dev.sluice.Refund;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Tests that need a server of their own: exact statement and transaction counts (pg_stat_statements,
 * pg_stat_database), "a refusal writes nothing" (WAL position), HOT updates, and fault injection
 * (immediate stop and restart, a frozen server, an exhausted pool, a statement stuck on a lock).
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class PostgresPrivateServerTest {
  static PostgresPrivateServer server;

  @BeforeAll static void start() throws Exception {
    server = PostgresPrivateServer.start();
    try (Connection c = DriverManager.getConnection(server.url("postgres")); Statement s = c.createStatement()) {
      s.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
      s.execute("CREATE DATABASE sluice");
    }
  }

  @AfterAll static void stop() throws Exception {
    if (server != null) {
      server.close();
    }
  }

  @Test @Order(1)
  void plainModeIsOneStatementAndOneTransactionPerDecisionAndRefusalsWriteNothing() throws Exception {
    String table = PostgresTestSupport.tableName();
    Policy policy = Policy.fixedWindow(PostgresTestSupport.name("count"), 20, Duration.ofHours(1));
    // No pool here: a pool's validation queries are its own cost, and a backend that exits flushes
    // its statistics at once, so pg_stat_database counts exactly what the limiter sent.
    PostgresUnpooledDataSource ds = new PostgresUnpooledDataSource(server.url());
    JdbcRateLimiter limiter = JdbcRateLimiter.builder(policy, ds).table(table).timeout(Duration.ofSeconds(5)).build();
    limiter.applySchema();
    limiter.tryAcquire("warm-up");
    try (Connection obs = DriverManager.getConnection(server.url("postgres")); Statement s = obs.createStatement()) {
      awaitOtherBackendsGone(s);
      s.execute("SELECT pg_stat_statements_reset()");
      long commitsBefore = xactCommit(s);
      long connectionsBefore = ds.opened.get();

      List<Decision> allowed = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        allowed.add(limiter.tryAcquire("user:1"));
      }
      assertThat(allowed).allMatch(Decision::allowed);
      String walBefore = wal(s);
      for (int i = 0; i < 30; i++) {
        Decision d = limiter.tryAcquire("user:1");
        assertThat(d.allowed()).isFalse();
        assertThat(d.reason()).isEqualTo(Reason.LIMIT_EXCEEDED);
      }
      for (int i = 0; i < 10; i++) {
        assertThat(limiter.peek("user:1").remaining()).isZero();
      }
      assertThat(wal(s)).as("30 refusals and 10 peeks wrote no WAL at all (no row lock, no xid)").isEqualTo(walBefore);
      for (int i = 0; i < 5; i++) {
        assertThat(limiter.refund(allowed.get(i).ticket().orElseThrow())).isEqualTo(Refund.APPLIED);
      }

      long calls = sum(s, "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query LIKE '%" + table + "%'");
      long all = sum(s, "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat%' AND query NOT LIKE '%pg_current_wal%'");
      assertThat(calls).as("statements for 20 acquires + 30 refusals + 10 peeks + 5 refunds").isEqualTo(65);
      assertThat(all).as("no other statement was sent (no BEGIN, no SET, no validation query)").isEqualTo(65);

      long connections = ds.opened.get() - connectionsBefore;
      long commits = waitForCommits(s, commitsBefore, 65 + connections) - commitsBefore;
      System.err.printf("[statements per decision] 65 calls -> %d statements, %d transactions committed"
          + " (%d of them backend start-ups, one per new connection)%n", calls, commits, connections);
      assertThat(commits - connections).as("one transaction per decision").isEqualTo(65);

      try (Connection db = DriverManager.getConnection(server.url()); Statement q = db.createStatement();
           ResultSet rs = q.executeQuery("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = '" + table + "'")) {
        rs.next();
        System.err.printf("[HOT] updates %d, heap-only %d%n", rs.getLong(1), rs.getLong(2));
        assertThat(rs.getLong(1)).as("19 allowed acquires after the first insert, 5 refunds").isEqualTo(19 + 5);
        assertThat(rs.getLong(2)).as("every update was HOT").isEqualTo(rs.getLong(1));
      }
    } finally {
      limiter.close();
    }
  }

  @Test @Order(2)
  void tenantModeIsOneTransactionPerDecision() throws Exception {
    String table = PostgresTestSupport.tableName();
    Policy policy = Policy.tokenBucket(PostgresTestSupport.name("tenant-count"), 5, 1, Duration.ofMinutes(1));
    PostgresUnpooledDataSource ds = new PostgresUnpooledDataSource(server.url());
    JdbcRateLimiter limiter = JdbcRateLimiter.builder(policy, ds).table(table).tenant(() -> "acme")
        .timeout(Duration.ofSeconds(5)).build();
    limiter.applySchema();
    limiter.tryAcquire("warm-up");
    try (Connection obs = DriverManager.getConnection(server.url("postgres")); Statement s = obs.createStatement()) {
      awaitOtherBackendsGone(s);
      s.execute("SELECT pg_stat_statements_reset()");
      long commitsBefore = xactCommit(s);
      long connectionsBefore = ds.opened.get();
      int allowed = 0;
      for (int i = 0; i < 10; i++) {
        allowed += limiter.tryAcquire("user:1").allowed() ? 1 : 0;
      }
      assertThat(allowed).isEqualTo(5);
      long setConfig = sum(s, "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query LIKE 'SELECT set_config(%'");
      long main = sum(s, "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query LIKE '%INSERT INTO " + table + "%'");
      assertThat(setConfig).isEqualTo(10);
      assertThat(main).isEqualTo(10);
      long connections = ds.opened.get() - connectionsBefore;
      long commits = waitForCommits(s, commitsBefore, 10 + connections) - commitsBefore;
      System.err.printf("[tenant mode] 10 decisions -> %d set_config + %d decision statements, %d transactions"
          + " (%d of them backend start-ups)%n", setConfig, main, commits, connections);
      assertThat(commits - connections).as("set_config and the decision share one transaction").isEqualTo(10);
    } finally {
      limiter.close();
    }
  }

  @Test @Order(3)
  void relaxedDurabilityCommitsWithoutWaitingForTheWalFlush() throws Exception {
    String table = PostgresTestSupport.tableName();
    Policy policy = Policy.fixedWindow(PostgresTestSupport.name("wal"), 1000, Duration.ofHours(1));
    PostgresUnpooledDataSource ds = new PostgresUnpooledDataSource(server.url());
    try (JdbcRateLimiter durable = JdbcRateLimiter.builder(policy, ds).table(table).timeout(Duration.ofSeconds(5)).build();
         JdbcRateLimiter relaxed = JdbcRateLimiter.builder(policy, ds).table(table).relaxedDurability(true)
             .timeout(Duration.ofSeconds(5)).build();
         Connection obs = DriverManager.getConnection(server.url("postgres")); Statement s = obs.createStatement()) {
      durable.applySchema();
      durable.tryAcquire("warm-up");
      long d = walSyncsDuring(s, () -> {
        for (int i = 0; i < 30; i++) {
          assertThat(durable.tryAcquire("d" + i).allowed()).isTrue();
        }
      });
      long r = walSyncsDuring(s, () -> {
        for (int i = 0; i < 30; i++) {
          assertThat(relaxed.tryAcquire("r" + i).allowed()).isTrue();
        }
      });
      System.err.printf("[durability] WAL syncs for 30 writing decisions: durable %d, relaxed %d%n", d, r);
      assertThat(d).as("a durable decision waits for its own WAL flush").isGreaterThanOrEqualTo(30);
      assertThat(r).as("relaxed decisions leave flushing to the WAL writer").isLessThan(15);
    }
  }

  private static long walSyncsDuring(Statement s, Runnable work) throws Exception {
    long before = settledWalSyncs(s);
    work.run();
    return settledWalSyncs(s) - before;
  }

  /** pg_stat_wal.wal_sync once it stops moving (backends flush their counters as they exit). */
  private static long settledWalSyncs(Statement s) throws Exception {
    long last = -1;
    long end = System.nanoTime() + 10_000_000_000L;
    while (System.nanoTime() < end) {
      Thread.sleep(300);
      s.execute("SELECT pg_stat_clear_snapshot()");
      long now = sum(s, "SELECT wal_sync FROM pg_stat_wal");
      if (now == last) {
        return now;
      }
      last = now;
    }
    return last;
  }

  @Test @Order(4)
  void faultsBecomeDecisionsWithinTheDeadlineAndTheLimiterRecovers() throws Exception {
    String table = PostgresTestSupport.tableName();
    Policy policy = Policy.gcra(PostgresTestSupport.name("faults"), 1000, Duration.ofSeconds(1), 1000);
    Duration timeout = Duration.ofMillis(300);
    long slackMillis = 400;
    HikariDataSource ds = PostgresTestSupport.pool(server.url(), 2);
    AtomicInteger alerts = new AtomicInteger();
    JdbcRateLimiter closed = JdbcRateLimiter.builder(policy, ds).table(table).timeout(timeout).build();
    JdbcRateLimiter open = JdbcRateLimiter.builder(policy, ds).table(table).timeout(timeout)
        .failureMode(FailureMode.open((p, r, e) -> alerts.incrementAndGet())).build();
    JdbcRateLimiter fallback = JdbcRateLimiter.builder(policy, ds).table(table).timeout(timeout)
        .failureMode(FailureMode.fallback(MemoryRateLimiter.builder(policy).build())).build();
    closed.applySchema();
    try {
      // The first decisions open the pool's connections; on a starved machine that can take longer
      // than the 300 ms deadline, so wait (a poll with a deadline) until one is decided by the store.
      long warm = System.nanoTime() + 20_000_000_000L;
      while (closed.tryAcquire("k").path() != Path.PRIMARY) {
        assertThat(System.nanoTime()).as("a decision by the freshly started server").isLessThan(warm);
      }
      long[] worst = new long[1];

      // 1. The server goes away (immediate stop, like a crash).
      server.stopServer();
      for (int i = 0; i < 10; i++) {
        Decision d = timed(() -> closed.tryAcquire("k"), timeout, slackMillis, worst);
        assertThat(d.allowed()).isFalse();
        assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
        assertThat(d.reason()).isIn(Reason.STORE_UNAVAILABLE, Reason.TIMEOUT);
        Decision o = timed(() -> open.tryAcquire("k"), timeout, slackMillis, worst);
        assertThat(o.allowed()).isTrue();
        assertThat(o.path()).isEqualTo(Path.FAILURE_MODE);
        Decision f = timed(() -> fallback.tryAcquire("k"), timeout, slackMillis, worst);
        assertThat(f.path()).isEqualTo(Path.FALLBACK);
        assertThat(f.allowed()).isTrue();
        Decision a = timed(() -> closed.tryAcquireAsync("k", 1).toCompletableFuture().join(), timeout, slackMillis, worst);
        assertThat(a.path()).isEqualTo(Path.FAILURE_MODE);
      }
      assertThat(alerts.get()).isEqualTo(10);
      // 2. It comes back: the same limiter recovers, no restart of the application.
      server.startServer();
      awaitPrimary(closed);

      // 3. The server freezes (SIGSTOP): connections hang instead of failing.
      server.freeze(true);
      try {
        for (int i = 0; i < 5; i++) {
          Decision d = timed(() -> closed.tryAcquire("k"), timeout, slackMillis, worst);
          assertThat(d.allowed()).isFalse();
          assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
        }
      } finally {
        server.freeze(false);
      }
      awaitPrimary(closed);

      // 4. Pool exhaustion: every connection is held elsewhere.
      try (Connection a = ds.getConnection(); Connection b = ds.getConnection()) {
        assertThat(a).isNotSameAs(b);
        for (int i = 0; i < 3; i++) {
          Decision d = timed(() -> closed.tryAcquire("k"), timeout, slackMillis, worst);
          assertThat(d.reason()).isEqualTo(Reason.TIMEOUT);
          assertThat(d.allowed()).isFalse();
        }
      }
      awaitPrimary(closed);

      // 5. A statement that cannot finish in time (its row is locked by a long transaction).
      try (Connection locker = DriverManager.getConnection(server.url()); Statement s = locker.createStatement()) {
        locker.setAutoCommit(false);
        s.execute("SELECT 1 FROM " + table + " FOR UPDATE");
        Decision d = timed(() -> closed.tryAcquire("k"), timeout, slackMillis, worst);
        assertThat(d.reason()).isEqualTo(Reason.TIMEOUT);
        locker.rollback();
      }
      awaitPrimary(closed);
      System.err.printf("[faults] worst decision latency under faults: %d ms (deadline %d ms)%n", worst[0], timeout.toMillis());
    } finally {
      closed.close();
      open.close();
      fallback.close();
      ds.close();
    }
  }

  private static Decision timed(Supplier<Decision> call, Duration timeout, long slackMillis, long[] worst) {
    long t0 = System.nanoTime();
    Decision d = call.get(); // any exception fails the test
    long ms = (System.nanoTime() - t0) / 1_000_000;
    worst[0] = Math.max(worst[0], ms);
    assertThat(ms).as("decision latency (ms) under a fault").isLessThanOrEqualTo(timeout.toMillis() + slackMillis);
    return d;
  }

  private static void awaitPrimary(JdbcRateLimiter limiter) throws InterruptedException {
    long end = System.nanoTime() + 30_000_000_000L;
    Decision d = null;
    while (System.nanoTime() < end) {
      d = limiter.tryAcquire("k");
      if (d.path() == Path.PRIMARY) {
        return;
      }
      Thread.sleep(50); // polling for a condition, not waiting for time
    }
    throw new AssertionError("limiter did not recover within 30 s; last decision " + d);
  }

  /**
   * Waits (bounded) until every backend but the observer's own has exited. A backend flushes its
   * statistics before it leaves pg_stat_activity, so the warm-up's commits are counted by then.
   */
  private static void awaitOtherBackendsGone(Statement s) throws Exception {
    long end = System.nanoTime() + 10_000_000_000L;
    while (sum(s, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()") > 0) {
      assertThat(System.nanoTime()).as("the warm-up's backends exit").isLessThan(end);
      Thread.sleep(20);
    }
  }

  private static long xactCommit(Statement s) throws SQLException {
    return sum(s, "SELECT xact_commit FROM pg_stat_database WHERE datname = 'sluice'");
  }

  private static long waitForCommits(Statement s, long before, long atLeast) throws Exception {
    long end = System.nanoTime() + 15_000_000_000L;
    long commits;
    do {
      s.execute("SELECT pg_stat_clear_snapshot()");
      commits = xactCommit(s);
      if (commits - before >= atLeast) {
        break;
      }
      Thread.sleep(100);
    } while (System.nanoTime() < end);
    Thread.sleep(300); // and nothing more arrives
    s.execute("SELECT pg_stat_clear_snapshot()");
    return xactCommit(s);
  }

  private static String wal(Statement s) throws SQLException {
    try (ResultSet rs = s.executeQuery("SELECT pg_current_wal_insert_lsn()::text")) {
      rs.next();
      return rs.getString(1);
    }
  }

  private static long sum(Statement s, String q) throws SQLException {
    try (ResultSet rs = s.executeQuery(q)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
