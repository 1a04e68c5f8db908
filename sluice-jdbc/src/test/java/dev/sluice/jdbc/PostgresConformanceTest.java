package dev.sluice.jdbc;

import dev.sluice.Algorithm;
import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.tck.RateLimiterContract;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The whole conformance kit against the local PostgreSQL (every algorithm but the sliding log). */
class PostgresConformanceTest extends RateLimiterContract {
  @RegisterExtension static final PostgresTable db = new PostgresTable(16);

  @Override protected RateLimiter newLimiter(Policy policy, Ticker ticker) {
    // A generous deadline: the kit checks exact decisions, and a loaded CI box must not turn a slow
    // commit into a TIMEOUT refusal. The deadline itself is tested in PostgresPrivateServerTest.
    return JdbcRateLimiter.builder(policy, db.ds()).table(db.table()).ticker(ticker).timeout(Duration.ofSeconds(20)).build();
  }

  @Override protected Optional<RateLimiter> newLimiterWithIssuer(Policy policy, Ticker ticker, Ticket.Issuer issuer) {
    return Optional.of(JdbcRateLimiter.builder(policy, db.ds()).table(db.table()).ticker(ticker).timeout(Duration.ofSeconds(20)).issuer(issuer).build());
  }

  @Override protected Optional<RateLimiter> newLimiterWithListener(Policy policy, Ticker ticker, dev.sluice.RateLimitListener listener) {
    return Optional.of(JdbcRateLimiter.builder(policy, db.ds()).table(db.table()).ticker(ticker).timeout(Duration.ofSeconds(20))
        .listener(listener, true).build());
  }

  @Override protected boolean supports(Algorithm algorithm) {
    return !(algorithm instanceof Algorithm.SlidingLog);
  }

  /** A private PostgreSQL frozen (SIGSTOP) and thawed: never the shared server. */
  @Override protected Optional<Outage> outage(Policy policy, Ticker ticker, FailureMode mode) throws Exception {
    return Optional.of(PostgresOutage.start(ds -> {
      JdbcRateLimiter limiter = JdbcRateLimiter.builder(policy, ds).ticker(ticker).timeout(Duration.ofMillis(500))
          .failureMode(mode).build();
      limiter.applySchema();
      return limiter;
    }));
  }
}
