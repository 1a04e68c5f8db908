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

  @AfterAll static void closeFixture() {
    if (fixture != null) {
      fixture.close();
      fixture = null;
    }
  }
}
