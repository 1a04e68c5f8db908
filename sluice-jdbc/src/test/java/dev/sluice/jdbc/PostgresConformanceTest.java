package dev.sluice.jdbc;

import dev.sluice.Algorithm;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.tck.RateLimiterContract;
import java.time.Duration;
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
}
