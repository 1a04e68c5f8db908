package dev.sluice.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.Policy;
import dev.sluice.Reason;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Test;

/**
 * Issue 14, finding 9: {@code table("app.limits")} with {@code tenant(...)}: {@code applySchema()}
 * failed with {@code syntax error at or near "."} (it wrote {@code CREATE POLICY app.limits_tenant})
 * and compared {@code pg_policies.tablename} with the qualified name, so a second apply would have
 * created the policy again. Plain and tenant mode, each applied twice, on the shared server.
 */
class PostgresSchemaQualifiedTableTest {

  @Test
  void tenantModeWithASchemaQualifiedTableFailedToApplyItsSchema() throws Exception {
    PostgresTestSupport.requireServer();
    String schema = "sluice_app_" + Long.toHexString(ThreadLocalRandom.current().nextLong() >>> 1);
    try (Connection admin = DriverManager.getConnection(PostgresTestSupport.URL); Statement s = admin.createStatement();
         HikariDataSource ds = PostgresTestSupport.pool(PostgresTestSupport.URL, 2)) {
      s.execute("CREATE SCHEMA " + schema);
      try {
        for (boolean tenantMode : new boolean[] {false, true}) {
          String table = schema + (tenantMode ? ".Limits_Tenant" : ".limits");
          Policy p = Policy.fixedWindow(PostgresTestSupport.name("qualified"), 2, Duration.ofHours(1));
          JdbcRateLimiter.Builder b = JdbcRateLimiter.builder(p, ds).table(table).timeout(Duration.ofSeconds(10));
          if (tenantMode) {
            b.tenant(() -> "acme");
          }
          try (JdbcRateLimiter l = b.build()) {
            l.applySchema();
            l.applySchema(); // idempotent: the policy lookup finds the policy the first apply created
            assertThat(l.tryAcquire("k").allowed()).as("%s", table).isTrue();
            assertThat(l.tryAcquire("k").allowed()).as("%s", table).isTrue();
            assertThat(l.tryAcquire("k").reason()).as("%s", table).isEqualTo(Reason.LIMIT_EXCEEDED);
          }
          try (ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_policies WHERE schemaname = '" + schema + "'"
              + " AND tablename = 'limits_tenant' AND policyname = 'limits_tenant_tenant'")) {
            rs.next();
            assertThat(rs.getInt(1)).as("the row-level security policy on %s", table).isEqualTo(tenantMode ? 1 : 0);
          }
          try (ResultSet rs = s.executeQuery("SELECT count(*) FROM " + table)) {
            rs.next();
            assertThat(rs.getInt(1)).as("rows of %s", table).isEqualTo(1);
          }
        }
      } finally {
        s.execute("DROP SCHEMA " + schema + " CASCADE");
      }
    }
  }
}
