package dev.sluice.jdbc.store;

import dev.sluice.Algorithm;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.store.VersionedStoreRateLimiter;
import dev.sluice.tck.RateLimiterContract;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.BeforeAll;

/** The compare-and-set engine over {@link JdbcVersionedStore} on MariaDb runs the whole kit (the sliding log is memory-only). */
class JdbcVersionedStoreMariaDbConformanceTest extends RateLimiterContract {
  private static JdbcVersionedStore store;

  @BeforeAll
  static void table() {
    store = JdbcVersionedStoreDatabases.store(JdbcVersionedStoreDatabases.mariadb(), JdbcVersionedStoreDatabases.TCK_TABLE);
  }

  @Override protected RateLimiter newLimiter(Policy policy, Ticker ticker) {
    // A generous deadline: the kit checks decisions, and a timed-out write that landed would be refused yet counted.
    return VersionedStoreRateLimiter.builder(policy, store).ticker(ticker).timeout(Duration.ofSeconds(10)).build();
  }

  @Override protected Optional<RateLimiter> newLimiterWithIssuer(Policy policy, Ticker ticker, Ticket.Issuer issuer) {
    return Optional.of(VersionedStoreRateLimiter.builder(policy, store).ticker(ticker).timeout(Duration.ofSeconds(10))
        .issuer(issuer).build());
  }

  @Override protected boolean supports(Algorithm algorithm) {
    return !(algorithm instanceof Algorithm.SlidingLog);
  }
}
