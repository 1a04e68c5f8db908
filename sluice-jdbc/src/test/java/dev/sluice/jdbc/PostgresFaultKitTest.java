package dev.sluice.jdbc;

import dev.sluice.tck.FaultContract;
import java.util.Optional;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The fault kit against the JDBC limiter on a private PostgreSQL (the kit stops, freezes and restarts
 * it; never the shared server), through the kit's proxy and a HikariCP pool, coalescing as the case
 * asks.
 */
class PostgresFaultKitTest extends FaultContract {
  private static PostgresFaultFixture fixture;

  @BeforeAll static void start() throws Exception {
    fixture = PostgresFaultFixture.privateServer((ds, s) -> JdbcRateLimiter.builder(s.policy(), ds).timeout(s.timeout())
        .failureMode(s.failureMode()).issuer(s.issuer()).maxBatch(s.coalescing() ? JdbcRateLimiter.MAX_BATCH : 1).build(),
        (ds, s) -> {
          JdbcRateLimiter l = JdbcRateLimiter.builder(s.policy(), ds).timeout(Duration.ofSeconds(30)).build();
          l.applySchema();
          return l;
        });
  }

  @AfterAll static void stop() {
    if (fixture != null) {
      fixture.close();
    }
  }

  @Override protected Fixture fixture() {
    return fixture;
  }

  @Override protected Optional<String> knownToFail(Case c, Fault fault) {
    return PostgresFaultFixture.knownToFail(c, fault, false);
  }
}
