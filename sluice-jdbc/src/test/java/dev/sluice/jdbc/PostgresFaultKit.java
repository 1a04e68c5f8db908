package dev.sluice.jdbc;

import dev.sluice.tck.FaultContract;
import org.junit.jupiter.api.AfterAll;

/**
 * The fault kit on PostgreSQL: a subclass says how to start its {@link PostgresFaultFixture}, once
 * per class.
 */
public abstract class PostgresFaultKit extends FaultContract {
  private static PostgresFaultFixture fixture;

  /** The fixture of this class, started before its first case. */
  protected abstract PostgresFaultFixture start() throws Exception;

  @Override protected final Fixture fixture() throws Exception {
    if (fixture == null) {
      fixture = start();
    }
    return fixture;
  }

  /**
   * One second, not the kit's 100 ms, which PostgreSQL does not reach here: a new connection's first
   * decision, asked the moment the server is back, took 17 to 285 ms at load 9 to 14 before the limiter
   * adds anything (PostgresRecoveryTest), and the kit measured 37 to 653 ms for the slowest key at load
   * 11 to 13 (docs/postgresql.md, "Recovery after an outage").
   */
  @Override protected java.time.Duration recoveryBound() {
    return java.time.Duration.ofSeconds(1);
  }

  @AfterAll static void closeFixture() {
    if (fixture != null) {
      fixture.close();
      fixture = null;
    }
  }
}
