package dev.sluice.benchmarks;

import dev.sluice.spi.StoreRateLimiter;
import java.sql.SQLException;
import java.util.concurrent.ThreadLocalRandom;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * The state of a PostgreSQL benchmark trial: a {@link PostgresFixture} for {@code keys} keys and
 * Sluice's {@code maxBatch}, and the key each call draws ({@code keys=1}: one hot key; else uniform).
 */
@State(Scope.Benchmark)
public abstract class PostgresTrial {

  @Param({"1", "10000"})
  public int keys;

  /** Sluice's request coalescing: 64 (the default) or 1 (off); {@code -p maxBatch=1,64} compares them in one run. */
  @Param({"64"})
  public int maxBatch = StoreRateLimiter.MAX_BATCH; // the default also when a test builds the state by hand

  PostgresFixture fx;

  @Setup(Level.Trial)
  public void setUp() throws SQLException {
    fx = new PostgresFixture(keys, maxBatch);
  }

  @TearDown(Level.Trial)
  public void tearDown() throws SQLException {
    fx.close();
  }

  int next() {
    return keys == 1 ? 0 : ThreadLocalRandom.current().nextInt(keys);
  }
}
