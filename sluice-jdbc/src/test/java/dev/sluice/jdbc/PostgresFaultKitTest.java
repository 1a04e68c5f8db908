package dev.sluice.jdbc;

import java.time.Duration;

/**
 * The fault kit against the JDBC limiter on a private PostgreSQL (the kit stops, freezes and restarts
 * it; never the shared server), through the kit's proxy and a HikariCP pool, coalescing as the case
 * asks.
 */
class PostgresFaultKitTest extends PostgresFaultKit {
  @Override protected PostgresFaultFixture start() throws Exception {
    return PostgresFaultFixture.privateServer((ds, s) -> JdbcRateLimiter.builder(s.policy(), ds).timeout(s.timeout())
        .failureMode(s.failureMode()).issuer(s.issuer()).maxBatch(s.coalescing() ? JdbcRateLimiter.MAX_BATCH : 1).build(),
        (ds, s) -> {
          JdbcRateLimiter l = JdbcRateLimiter.builder(s.policy(), ds).timeout(Duration.ofSeconds(30)).build();
          l.applySchema();
          return l;
        });
  }
}
