package dev.sluice.jdbc.store;

import dev.sluice.Algorithm;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.spi.StoreException;
import dev.sluice.spi.StoreTimeoutException;
import dev.sluice.spi.StoredRecord;
import dev.sluice.spi.VersionedStore;
import dev.sluice.store.VersionedStoreRateLimiter;
import dev.sluice.tck.RateLimiterContract;
import dev.sluice.tck.VersionedStoreContract;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Nested;

/**
 * The store of {@code docs/stores.md}, verbatim, and the two suites that tell its author it is right.
 * If this test fails, the docs are wrong.
 */
class JdbcVersionedStoreDocsExampleTest {

  // --- docs/stores.md: begin TinySqlStore ---
  /** A VersionedStore in one PostgreSQL table: (p, id, version, expires, val), primary key (p, id). */
  static final class TinySqlStore implements VersionedStore {
    private final DataSource ds;

    TinySqlStore(DataSource ds) {
      this.ds = ds;
    }

    @Override public StoredRecord read(String p, String id, long deadline) {
      return call(deadline, c -> {
        try (PreparedStatement s = c.prepareStatement("SELECT version, expires, val FROM sluice_tiny_store WHERE p = ? AND id = ?")) {
          s.setString(1, p);
          s.setString(2, id);
          try (ResultSet r = s.executeQuery()) {
            return r.next() ? new StoredRecord(id, r.getString(3), r.getLong(1), r.getLong(2)) : null;
          }
        }
      });
    }

    @Override public boolean compareAndSet(String p, String id, long expected, String value, long version,
                                           long expires, long deadline) {
      String sql = expected == ABSENT
          ? "INSERT INTO sluice_tiny_store (version, expires, val, p, id) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
          : "UPDATE sluice_tiny_store SET version = ?, expires = ?, val = ? WHERE p = ? AND id = ? AND version = ?";
      return call(deadline, c -> {
        try (PreparedStatement s = c.prepareStatement(sql)) {
          s.setLong(1, version);
          s.setLong(2, expires);
          s.setString(3, value);
          s.setString(4, p);
          s.setString(5, id);
          if (expected != ABSENT) {
            s.setLong(6, expected);
          }
          return s.executeUpdate() == 1;
        }
      });
    }

    @Override public List<StoredRecord> list(String p, String afterId, int limit, long deadline) {
      return call(deadline, c -> {
        try (PreparedStatement s = c.prepareStatement("SELECT id, version, expires, val FROM sluice_tiny_store"
            + " WHERE p = ? AND id > ? ORDER BY id LIMIT ?")) {
          s.setString(1, p);
          s.setString(2, afterId == null ? "" : afterId);
          s.setInt(3, limit);
          List<StoredRecord> page = new ArrayList<>();
          try (ResultSet r = s.executeQuery()) {
            while (r.next()) {
              page.add(new StoredRecord(r.getString(1), r.getString(4), r.getLong(2), r.getLong(3)));
            }
          }
          return page;
        }
      });
    }

    @Override public boolean deleteIfVersion(String p, String id, long expected, long deadline) {
      return call(deadline, c -> {
        try (PreparedStatement s = c.prepareStatement("DELETE FROM sluice_tiny_store WHERE p = ? AND id = ? AND version = ?")) {
          s.setString(1, p);
          s.setString(2, id);
          s.setLong(3, expected);
          return s.executeUpdate() == 1;
        }
      });
    }

    interface Sql<T> { T run(Connection c) throws SQLException; }

    /** One statement with the deadline as the socket timeout; a failure past the deadline is a timeout. */
    private <T> T call(long deadline, Sql<T> sql) {
      long ms = (deadline - System.nanoTime()) / 1_000_000;
      if (ms <= 0) {
        throw new StoreTimeoutException("deadline passed");
      }
      try (Connection c = ds.getConnection()) {
        c.setNetworkTimeout(Runnable::run, (int) ms); // the pool (HikariCP) restores it on return
        return sql.run(c);
      } catch (SQLException e) {
        throw System.nanoTime() >= deadline ? new StoreTimeoutException("timed out", e) : new StoreException("failed", e);
      }
    }
  }
  // --- docs/stores.md: end TinySqlStore ---

  private static volatile boolean created;

  static TinySqlStore store() throws SQLException {
    DataSource ds = JdbcVersionedStoreDatabases.postgres();
    if (created) {
      return new TinySqlStore(ds);
    }
    created = true;
    try (Connection c = ds.getConnection(); var s = c.createStatement()) {
      s.execute("CREATE TABLE IF NOT EXISTS sluice_tiny_store (p TEXT COLLATE \"C\", id TEXT COLLATE \"C\", version BIGINT NOT NULL,"
          + " expires BIGINT NOT NULL, val TEXT NOT NULL, PRIMARY KEY (p, id))");
    }
    return new TinySqlStore(ds);
  }

  @Nested
  class ItKeepsTheStoreContract extends VersionedStoreContract {
    @Override protected VersionedStore newStore() {
      try {
        return store();
      } catch (SQLException e) {
        throw new AssertionError(e);
      }
    }
  }

  @Nested
  class TheEngineOverItPassesTheKit extends RateLimiterContract {
    @Override protected RateLimiter newLimiter(Policy policy, Ticker ticker) {
      try {
        return VersionedStoreRateLimiter.builder(policy, store()).ticker(ticker).timeout(Duration.ofSeconds(10)).build();
      } catch (SQLException e) {
        throw new AssertionError(e);
      }
    }

    @Override protected boolean supports(Algorithm algorithm) {
      return !(algorithm instanceof Algorithm.SlidingLog);
    }

    @Override protected int traceLength() {
      return 1_000;
    }
  }
}
