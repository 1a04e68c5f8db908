package dev.sluice.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.Algorithm;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.tck.RateLimiterContract;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The whole conformance kit against the local PostgreSQL (every algorithm but the sliding log). */
class PostgresConformanceTest extends RateLimiterContract {
  static HikariDataSource ds;
  static String table;

  @BeforeAll static void setUp() throws Exception {
    PostgresTestSupport.requireServer();
    ds = PostgresTestSupport.pool(PostgresTestSupport.URL, 16);
    table = PostgresTestSupport.tableName();
    JdbcRateLimiter.builder(Policy.fixedWindow("schema", 1, Duration.ofSeconds(1)), ds).table(table).build().applySchema();
  }

  @AfterAll static void tearDown() {
    if (ds != null) {
      PostgresTestSupport.drop(PostgresTestSupport.URL, table);
      ds.close();
    }
  }

  @Override protected RateLimiter newLimiter(Policy policy, Ticker ticker) {
    // A generous deadline: the kit checks exact decisions, and a loaded CI box must not turn a slow
    // commit into a TIMEOUT refusal. The deadline itself is tested in PostgresPrivateServerTest.
    return JdbcRateLimiter.builder(policy, ds).table(table).ticker(ticker).timeout(Duration.ofSeconds(20)).build();
  }

  @Override protected boolean supports(Algorithm algorithm) {
    return !(algorithm instanceof Algorithm.SlidingLog);
  }
}
