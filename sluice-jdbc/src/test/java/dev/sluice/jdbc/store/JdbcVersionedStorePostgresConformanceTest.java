package dev.sluice.jdbc.store;

import dev.sluice.Algorithm;
import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.jdbc.PostgresOutage;
import dev.sluice.store.VersionedStoreRateLimiter;
import dev.sluice.tck.RateLimiterContract;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.BeforeAll;

/** The compare-and-set engine over {@link JdbcVersionedStore} on Postgres runs the whole kit (the sliding log is memory-only). */
class JdbcVersionedStorePostgresConformanceTest extends RateLimiterContract {
  private static JdbcVersionedStore store;

  @BeforeAll
  static void table() {
    store = JdbcVersionedStoreDatabases.store(JdbcVersionedStoreDatabases.postgres(), JdbcVersionedStoreDatabases.TCK_TABLE);
  }

  @Override protected RateLimiter newLimiter(Policy policy, Ticker ticker) {
    // A generous deadline: the kit checks decisions, and a timed-out write that landed would be refused yet counted.
    return VersionedStoreRateLimiter.builder(policy, store).ticker(ticker).timeout(Duration.ofSeconds(10)).build();
  }

  @Override protected Optional<RateLimiter> newLimiterWithIssuer(Policy policy, Ticker ticker, Ticket.Issuer issuer) {
    return Optional.of(VersionedStoreRateLimiter.builder(policy, store).ticker(ticker).timeout(Duration.ofSeconds(10))
        .issuer(issuer).build());
  }

  /** The engine over a JDBC store on a private PostgreSQL that the outage cases freeze. */
  @Override protected Optional<Outage> outage(Policy policy, Ticker ticker, FailureMode mode) throws Exception {
    return Optional.of(PostgresOutage.start(ds -> VersionedStoreRateLimiter.builder(policy,
        JdbcVersionedStoreDatabases.store(ds, JdbcVersionedStoreDatabases.TCK_TABLE)).ticker(ticker)
        .timeout(Duration.ofMillis(500)).failureMode(mode).build()));
  }

  @Override protected boolean supports(Algorithm algorithm) {
    return !(algorithm instanceof Algorithm.SlidingLog);
  }
}
