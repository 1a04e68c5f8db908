package dev.sluice.jdbc;

import dev.sluice.Algorithm;
import dev.sluice.FailureMode;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.tck.RateLimiterContract;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The whole conformance kit against the local PostgreSQL (every algorithm but the sliding log). */
class PostgresConformanceTest extends RateLimiterContract {
  @RegisterExtension static final PostgresTable db = new PostgresTable(16);

  @Override protected RateLimiter newLimiter(Policy policy, Ticker ticker) {
    // A generous deadline: the kit checks exact decisions, and a loaded CI box must not turn a slow
    // commit into a TIMEOUT refusal. The deadline itself is tested in PostgresPrivateServerTest.
    return JdbcRateLimiter.builder(policy, db.ds()).table(db.table()).ticker(ticker).timeout(Duration.ofSeconds(20)).build();
  }

  @Override protected boolean supports(Algorithm algorithm) {
    return !(algorithm instanceof Algorithm.SlidingLog);
  }

  /** A private PostgreSQL frozen (SIGSTOP) and thawed: never the shared server. */
  @Override protected Optional<Outage> outage(Policy policy, Ticker ticker, FailureMode mode) throws Exception {
    PostgresPrivateServer server = PostgresPrivateServer.start();
    try (Connection c = DriverManager.getConnection(server.url("postgres")); Statement s = c.createStatement()) {
      s.execute("CREATE DATABASE sluice");
    }
    PostgresUnpooledDataSource ds = new PostgresUnpooledDataSource(server.url());
    JdbcRateLimiter limiter = JdbcRateLimiter.builder(policy, ds).ticker(ticker).timeout(Duration.ofMillis(500))
        .failureMode(mode).build();
    limiter.applySchema();
    return Optional.of(new Outage() {
      @Override public RateLimiter limiter() {
        return limiter;
      }

      @Override public void down() throws Exception {
        server.freeze(true);
      }

      @Override public void up() throws Exception {
        server.freeze(false);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (limiter.peek("probe").path() != Path.PRIMARY) {
          if (System.nanoTime() > deadline) {
            throw new AssertionError("the private PostgreSQL did not answer within 30 s of SIGCONT");
          }
        }
      }

      @Override public void close() {
        limiter.close();
        server.close();
      }
    });
  }
}
