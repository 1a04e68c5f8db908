package dev.sluice.jdbc.store;

import dev.sluice.jdbc.PostgresFaultFixture;
import dev.sluice.jdbc.PostgresTestSupport;
import dev.sluice.store.VersionedStoreRateLimiter;
import dev.sluice.tck.FaultContract;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The fault kit against the versioned-store engine over {@link JdbcVersionedStore} on the shared
 * PostgreSQL behind the kit's proxy (proxy faults only: the shared server is never stopped or
 * frozen), on the system clock.
 */
class JdbcVersionedStoreFaultKitTest extends FaultContract {
  private static PostgresFaultFixture fixture;

  @BeforeAll static void start() throws Exception {
    fixture = PostgresFaultFixture.shared(PostgresTestSupport.URL, (ds, s) -> VersionedStoreRateLimiter.builder(s.policy(),
        JdbcVersionedStoreDatabases.store(ds, JdbcVersionedStoreDatabases.TCK_TABLE)).timeout(s.timeout())
        .failureMode(s.failureMode()).issuer(s.issuer())
        .maxBatch(s.coalescing() ? VersionedStoreRateLimiter.MAX_BATCH : 1).build());
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
    return PostgresFaultFixture.knownToFail(c, fault, true);
  }
}
