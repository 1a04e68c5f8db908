package dev.sluice.jdbc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Assumptions;

/** The shared test PostgreSQL (SLUICE_POSTGRES_URL), private table names, skip-or-fail when unreachable. */
public final class PostgresTestSupport {
  public static final String URL = System.getenv().getOrDefault("SLUICE_POSTGRES_URL",
      "jdbc:postgresql://127.0.0.1:5432/test?user=postgres");

  private PostgresTestSupport() {}

  /** Skips (loudly) when the server is unreachable, or fails when CI=true. */
  public static void requireServer() {
    try (Connection c = DriverManager.getConnection(URL)) {
      c.isValid(2);
    } catch (SQLException e) {
      String msg = "PostgreSQL at " + URL + " is unreachable (" + e.getMessage() + "); PostgreSQL tests skipped";
      if ("true".equals(System.getenv("CI"))) {
        throw new AssertionError(msg, e);
      }
      System.err.println("*** " + msg + " ***");
      Assumptions.abort(msg);
    }
  }

  static HikariDataSource pool(String url, int size) {
    HikariConfig cfg = new HikariConfig();
    cfg.setJdbcUrl(url);
    cfg.setMaximumPoolSize(size);
    cfg.setMinimumIdle(0);
    cfg.setConnectionTimeout(1_000);
    cfg.setValidationTimeout(500);
    cfg.setInitializationFailTimeout(-1);
    return new HikariDataSource(cfg);
  }

  public static String tableName() {
    return "sluice_pg_test_" + Long.toHexString(ThreadLocalRandom.current().nextLong() >>> 1);
  }

  public static void drop(String url, String table) {
    try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement()) {
      s.execute("DROP TABLE IF EXISTS " + table);
    } catch (SQLException e) {
      System.err.println("could not drop " + table + ": " + e.getMessage());
    }
  }

  static String name(String prefix) {
    return prefix + "-" + Long.toHexString(ThreadLocalRandom.current().nextLong() >>> 1);
  }
}
