package dev.sluice.jdbc;

import dev.sluice.tck.FaultContract;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;

/**
 * The fault kit on PostgreSQL: a subclass says how to start its {@link PostgresFaultFixture}, once
 * per class, and whether it is the engine (whose recovery fails for a reason of its own, {@link PostgresFaultFixture#knownToFail}).
 */
public abstract class PostgresFaultKit extends FaultContract {
  private static PostgresFaultFixture fixture;

  /** The fixture of this class, started before its first case. */
  protected abstract PostgresFaultFixture start() throws Exception;

  /** True for the versioned-store engine. */
  protected boolean engine() {
    return false;
  }

  @Override protected final Fixture fixture() throws Exception {
    if (fixture == null) {
      fixture = start();
    }
    return fixture;
  }

  @Override protected final Optional<String> knownToFail(Case c, Fault fault) {
    return PostgresFaultFixture.knownToFail(c, fault, engine());
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
