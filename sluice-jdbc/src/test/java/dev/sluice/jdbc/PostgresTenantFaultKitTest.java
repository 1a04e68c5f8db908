package dev.sluice.jdbc;

import dev.sluice.tck.FaultContract;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The fault kit against the JDBC limiter in tenant mode, as an ordinary role under row-level
 * security, on the shared PostgreSQL behind the kit's proxy (proxy faults only: the shared server is
 * never stopped or frozen).
 */
class PostgresTenantFaultKitTest extends FaultContract {
  @RegisterExtension static final PostgresRlsTable db = new PostgresRlsTable(1);
  private static PostgresFaultFixture fixture;

  @BeforeAll static void start() throws Exception {
    fixture = PostgresFaultFixture.shared(PostgresTestSupport.URL.replace("user=postgres", "user=" + db.role()),
        (ds, s) -> JdbcRateLimiter.builder(s.policy(), ds).table(db.table()).tenant(() -> "fault-tenant")
            .timeout(s.timeout()).failureMode(s.failureMode()).issuer(s.issuer())
            .maxBatch(s.coalescing() ? JdbcRateLimiter.MAX_BATCH : 1).build());
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
