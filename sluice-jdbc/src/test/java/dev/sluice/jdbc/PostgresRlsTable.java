package dev.sluice.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.Policy;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A test class's own tenant-mode table on the shared server and an ordinary role (no superuser, no
 * BYPASSRLS: either would bypass row-level security and prove nothing) with DML on it only, and a
 * pool connected as that role. The schema is applied by the owner (postgres). Created before the
 * class (skipped, or failed under CI=true, when the server is unreachable); table and role dropped
 * after it. {@code @RegisterExtension static final PostgresRlsTable db = new PostgresRlsTable(4);}
 */
final class PostgresRlsTable implements BeforeAllCallback, AfterAllCallback {
  private final int poolSize;
  private String table;
  private String role;
  private HikariDataSource asRole;

  PostgresRlsTable(int poolSize) {
    this.poolSize = poolSize;
  }

  /** The pool connected as the ordinary role. */
  HikariDataSource asRole() {
    return asRole;
  }

  String table() {
    return table;
  }

  String role() {
    return role;
  }

  @Override public void beforeAll(ExtensionContext context) throws Exception {
    PostgresTestSupport.requireServer();
    table = PostgresTestSupport.tableName();
    role = "sluice_pg_role_" + Long.toHexString(ThreadLocalRandom.current().nextLong() >>> 1);
    try (Connection c = DriverManager.getConnection(PostgresTestSupport.URL); Statement s = c.createStatement()) {
      s.execute("CREATE ROLE " + role + " LOGIN NOSUPERUSER NOBYPASSRLS");
    }
    try (HikariDataSource owner = PostgresTestSupport.pool(PostgresTestSupport.URL, 1)) {
      JdbcRateLimiter.builder(Policy.fixedWindow("schema", 1, Duration.ofSeconds(1)), owner).table(table)
          .tenant(() -> "owner").build().applySchema();
      try (Connection c = owner.getConnection(); Statement s = c.createStatement()) {
        s.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON " + table + " TO " + role);
      }
    }
    asRole = PostgresTestSupport.pool(PostgresTestSupport.URL.replace("user=postgres", "user=" + role), poolSize);
  }

  @Override public void afterAll(ExtensionContext context) {
    if (asRole != null) {
      asRole.close();
    }
    if (table != null) {
      PostgresTestSupport.drop(PostgresTestSupport.URL, table);
    }
    if (role != null) {
      try (Connection c = DriverManager.getConnection(PostgresTestSupport.URL); Statement s = c.createStatement()) {
        s.execute("DROP ROLE IF EXISTS " + role);
      } catch (SQLException e) {
        System.err.println("could not drop role " + role + ": " + e.getMessage());
      }
    }
  }
}
