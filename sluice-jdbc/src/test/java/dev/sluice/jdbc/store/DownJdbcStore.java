package dev.sluice.jdbc.store;

import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.store.VersionedStoreRateLimiter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.time.Duration;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A real shared-store limiter whose store is down, for other modules' tests (shipped in this
 * module's test-jar): Sluice's JDBC versioned store, through the PostgreSQL driver, at a local port
 * nothing listens on (bound, then closed). Every decision opens a real connection, is refused by the
 * kernel, and is decided by the failure mode, exactly as when the database is unreachable.
 */
public final class DownJdbcStore {
  private DownJdbcStore() {}

  public static VersionedStoreRateLimiter limiter(Policy policy, FailureMode mode, RateLimitListener listener) {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setServerNames(new String[] {"127.0.0.1"});
    ds.setPortNumbers(new int[] {closedPort()});
    ds.setDatabaseName("sluice_down");
    ds.setUser("postgres");
    ds.setConnectTimeout(2);
    JdbcVersionedStore store = JdbcVersionedStore.builder(ds).dialect(JdbcVersionedStore.Dialect.POSTGRESQL).build();
    return VersionedStoreRateLimiter.builder(policy, store).failureMode(mode).timeout(Duration.ofSeconds(2))
        .listener(listener, false).build();
  }

  /** A local TCP port that was free a moment ago and that nothing listens on. */
  public static int closedPort() {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
