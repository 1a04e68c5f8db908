package dev.sluice.jdbc;

import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The fault kit against the JDBC limiter in tenant mode, as an ordinary role under row-level
 * security, on the shared PostgreSQL behind the kit's proxy (proxy faults only: the shared server is
 * never stopped or frozen).
 */
class PostgresTenantFaultKitTest extends PostgresFaultKit {
  @RegisterExtension static final PostgresRlsTable db = new PostgresRlsTable(1);

  @Override protected PostgresFaultFixture start() throws Exception {
    return PostgresFaultFixture.shared(PostgresTestSupport.URL.replace("user=postgres", "user=" + db.role()),
        (ds, s) -> JdbcRateLimiter.builder(s.policy(), ds).table(db.table()).tenant(() -> "fault-tenant")
            .timeout(s.timeout()).failureMode(s.failureMode()).issuer(s.issuer())
            .maxBatch(s.coalescing() ? JdbcRateLimiter.MAX_BATCH : 1).build());
  }
}
