package dev.sluice.jdbc.store;

import dev.sluice.jdbc.PostgresFaultFixture;
import dev.sluice.jdbc.PostgresFaultKit;
import dev.sluice.jdbc.PostgresTestSupport;
import dev.sluice.store.VersionedStoreRateLimiter;

/**
 * The fault kit against the versioned-store engine over {@link JdbcVersionedStore} on the shared
 * PostgreSQL behind the kit's proxy (proxy faults only: the shared server is never stopped or
 * frozen), on the system clock.
 */
class JdbcVersionedStoreFaultKitTest extends PostgresFaultKit {
  @Override protected PostgresFaultFixture start() throws Exception {
    return PostgresFaultFixture.shared(PostgresTestSupport.URL, (ds, s) -> VersionedStoreRateLimiter.builder(s.policy(),
        JdbcVersionedStoreDatabases.store(ds, JdbcVersionedStoreDatabases.TCK_TABLE)).timeout(s.timeout())
        .failureMode(s.failureMode()).issuer(s.issuer())
        .maxBatch(s.coalescing() ? VersionedStoreRateLimiter.MAX_BATCH : 1).build());
  }
}
