package dev.sluice.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.Policy;
import java.time.Duration;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A test class's own limiter table on the shared server, with a pool: created before the class
 * (skipped, or failed under CI=true, when the server is unreachable), dropped after it.
 * {@code @RegisterExtension static final PostgresTable db = new PostgresTable(4);}
 */
final class PostgresTable implements BeforeAllCallback, AfterAllCallback {
  private final int poolSize;
  private HikariDataSource ds;
  private String table;

  PostgresTable(int poolSize) {
    this.poolSize = poolSize;
  }

  HikariDataSource ds() {
    return ds;
  }

  String table() {
    return table;
  }

  @Override public void beforeAll(ExtensionContext context) throws Exception {
    PostgresTestSupport.requireServer();
    ds = PostgresTestSupport.pool(PostgresTestSupport.URL, poolSize);
    table = PostgresTestSupport.tableName();
    JdbcRateLimiter.builder(Policy.fixedWindow("schema", 1, Duration.ofSeconds(1)), ds).table(table).build().applySchema();
  }

  @Override public void afterAll(ExtensionContext context) {
    if (ds != null) {
      PostgresTestSupport.drop(PostgresTestSupport.URL, table);
      ds.close();
    }
  }
}
