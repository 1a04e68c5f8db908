package dev.sluice.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Ticker;
import dev.sluice.internal.Checks;
import dev.sluice.internal.StoredId;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 13: the row's well-formedness rule had a Java copy beside the SQL one, and both bounded the
 * state at 2^53 where the core's StateFormat bounds it at 2^52. The one rule is now the SQL predicate,
 * with the core's constants; this test holds it to the core's {@link dev.sluice.Algorithm} records and
 * to 2^52 on the real server.
 */
class PostgresRowTest {
  static final long MAX = Checks.MAX_EXACT;
  @RegisterExtension static final PostgresTable db = new PostgresTable(2);

  @Test
  void aPinnedConfigurationIsWellFormedExactlyWhenTheCoresAlgorithmAcceptsIt() throws Exception {
    long w = Checks.MIN_WINDOW_MICROS;
    long[] values = {-1, 0, 1, 2, 4, 5, 8, 9, w - 1, w, w + 1, 1L << 26, Checks.MAX_WINDOW_MICROS, Checks.MAX_WINDOW_MICROS + 1,
        MAX / w, MAX / w + 1, MAX / 2, MAX - w, MAX - 1, MAX, MAX + 1};
    List<long[]> rows = new ArrayList<>();
    List<Boolean> accepted = new ArrayList<>();
    for (int alg = PostgresRow.ALG_FIXED; alg <= PostgresRow.ALG_GCRA; alg++) {
      for (long p1 : values) {
        for (long p2 : values) {
          for (long p3 : alg == PostgresRow.ALG_BUCKET || alg == PostgresRow.ALG_GCRA ? values : new long[] {0}) {
            rows.add(new long[] {alg, 1, p1, p2, p3, 0, 0, 0});
            try {
              PostgresRow.algorithm(alg, p1, p2, p3);
              accepted.add(true);
            } catch (IllegalArgumentException e) {
              accepted.add(false);
            }
          }
        }
      }
    }
    List<Boolean> verdicts = verdicts(rows);
    for (int i = 0; i < rows.size(); i++) {
      long[] r = rows.get(i);
      assertThat(verdicts.get(i)).as("alg %d p1 %d p2 %d p3 %d", r[0], r[2], r[3], r[4]).isEqualTo(accepted.get(i));
    }
    assertThat(accepted).contains(true, false);
  }

  @Test
  void stateWordsAreBoundedAtTheCores2To52() throws Exception {
    long[][] rows = {
        {PostgresRow.ALG_FIXED, 0, 1, 2, 0, 1, MAX, 0}, {PostgresRow.ALG_FIXED, 0, 1, 2, 0, 1, MAX + 1, 0},
        {PostgresRow.ALG_GCRA, 0, 1, 2, 3, MAX, 0, 0}, {PostgresRow.ALG_GCRA, 0, 1, 2, 3, MAX + 1, 0, 0},
        {PostgresRow.ALG_SLIDING, 0, 1, 2, 0, 1, 1, MAX}, {PostgresRow.ALG_SLIDING, 0, 1, 2, 0, 1, 1, MAX + 1},
        {PostgresRow.ALG_BUCKET, 0, 1, 2, 3, 1, -1, 0},
        {PostgresRow.ALG_BUCKET, 0, 1, 2, 3, 0, 1, 0}, // an absent state is all zeros
        {PostgresRow.ALG_BUCKET, 0, 1, 2, 3, 1, 1, 1}, // only the sliding window uses s2
        {0, 0, 1, 2, 3, 1, 1, 0}, {5, 0, 1, 2, 3, 1, 1, 0},
        {PostgresRow.ALG_SLIDING, 0, 1, 2, 0, 0, 3, 0}}; // a sliding window's start is 0 on a clock under one window
    assertThat(verdicts(List.of(rows))).containsExactly(true, false, true, false, true, false, false, false, false, false, false,
        true);

    // Through the limiter: a count of 2^52 is a (refused) state, one more is corrupt, whatever the failure mode.
    ManualTicker t = ManualTicker.at(1_800_000_000_000_000L);
    Policy p = Policy.fixedWindow(PostgresTestSupport.name("bound"), 5, Duration.ofMinutes(1));
    try (JdbcRateLimiter l = JdbcRateLimiter.builder(p, db.ds()).table(db.table()).ticker(t).timeout(Duration.ofSeconds(10)).build()) {
      assertThat(l.tryAcquire("k").allowed()).isTrue();
      setCount(p, "k", MAX);
      Decision atBound = l.tryAcquire("k");
      assertThat(atBound.reason()).isEqualTo(Reason.LIMIT_EXCEEDED);
      assertThat(l.peek("k").reason()).isEqualTo(Reason.LIMIT_EXCEEDED);
      setCount(p, "k", MAX + 1);
      assertThat(l.tryAcquire("k").reason()).isEqualTo(Reason.CORRUPT_STATE);
      assertThat(l.peek("k").reason()).isEqualTo(Reason.CORRUPT_STATE);
    }
  }

  @Test
  void aClockReadingAboveTheStateBoundIsRefusedWithoutTouchingTheStore() {
    ManualTicker t = ManualTicker.at(Checks.MAX_CLOCK);
    t.advanceMicros(1); // past the bound: a manual ticker cannot start there, but it can be moved there
    Policy p = Policy.tokenBucket(PostgresTestSupport.name("clock"), 5, 5, Duration.ofSeconds(1));
    List<Reason> reasons = new ArrayList<>();
    try (JdbcRateLimiter l = JdbcRateLimiter.builder(p, PostgresModuleAndBuilderTest.NOWHERE).ticker(t).build()) {
      reasons.add(l.tryAcquire("k").reason());
      reasons.add(l.peek("k").reason());
      t.advanceMicros(-1);
      reasons.add(l.tryAcquire("k").reason());
    }
    assertThat(reasons).as("the store is unreachable, so only a reading that is refused first says INVALID_CLOCK")
        .containsExactly(Reason.INVALID_CLOCK, Reason.INVALID_CLOCK, Reason.STORE_UNAVAILABLE);
  }

  /**
   * The predicate's verdict on each row {alg, pinned (0/1), p1, p2, p3, s0, s1, s2}, stored in the
   * table and read back, as the statements evaluate it (never folded as constants at plan time).
   */
  private static List<Boolean> verdicts(List<long[]> rows) throws SQLException {
    String pid = PostgresTestSupport.name("well-formed");
    List<Boolean> out = new ArrayList<>();
    try (Connection c = db.ds().getConnection()) {
      try (PreparedStatement ins = c.prepareStatement("INSERT INTO " + db.table() + " (policy_id, key_id, alg, pinned, p1, p2, p3,"
          + " s0, s1, s2, expires_at, version, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 1, 0)")) {
        for (int i = 0; i < rows.size(); i++) {
          long[] r = rows.get(i);
          ins.setString(1, pid);
          ins.setString(2, String.format("%06d", i));
          ins.setShort(3, (short) r[0]);
          ins.setBoolean(4, r[1] == 1);
          for (int j = 2; j < 8; j++) {
            ins.setLong(j + 3, r[j]);
          }
          ins.addBatch();
        }
        ins.executeBatch();
      }
      try (PreparedStatement q = c.prepareStatement("SELECT " + PostgresRow.wellFormed("r") + " AS ok FROM " + db.table()
          + " r WHERE r.policy_id = ? ORDER BY r.key_id")) {
        q.setString(1, pid);
        try (ResultSet rs = q.executeQuery()) {
          while (rs.next()) {
            out.add(rs.getBoolean("ok"));
          }
        }
      }
    }
    assertThat(out).hasSameSizeAs(rows);
    return out;
  }

  private static void setCount(Policy p, String key, long count) throws SQLException {
    try (Connection c = db.ds().getConnection(); Statement s = c.createStatement()) {
      assertThat(s.executeUpdate("UPDATE " + db.table() + " SET s1 = " + count + " WHERE key_id = '"
          + StoredId.key(p.name(), key) + "'")).isEqualTo(1);
    }
  }
}
