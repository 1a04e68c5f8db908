package dev.sluice.benchmarks;

import java.sql.SQLException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * PostgreSQL: Sluice's {@code JdbcRateLimiter} (one {@code INSERT ... ON CONFLICT DO UPDATE ...
 * RETURNING} per decision, autocommit), with durable commits and with relaxed durability
 * ({@code synchronous_commit = off} for its own transactions), against Bucket4j's select-for-update and
 * advisory-lock proxy managers (a transaction of several statements), on the same server, 16 pooled
 * connections each, every check allowed. {@code keys=1} is one hot key; {@code keys=10000} draws a
 * key uniformly per check. Statements per decision are counted apart by {@link PostgresStatementCount}.
 *
 * <p>Run (server from {@code SLUICE_POSTGRES_URL}, default
 * {@code jdbc:postgresql://127.0.0.1:5432/test?user=postgres}):
 * {@code java -jar sluice-benchmarks/target/benchmarks.jar PostgresBenchmark -t 16} (and {@code -t 1}, {@code -t 2}).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class PostgresBenchmark {

  @Param({"1", "10000"})
  public int keys;

  PostgresFixture fx;

  @Setup(Level.Trial)
  public void setUp() throws SQLException {
    fx = new PostgresFixture(keys);
  }

  @TearDown(Level.Trial)
  public void tearDown() throws SQLException {
    fx.close();
  }

  private int next() {
    return keys == 1 ? 0 : ThreadLocalRandom.current().nextInt(keys);
  }

  @Benchmark
  public boolean sluiceDurable() {
    return fx.sluice.tryAcquire(fx.keys[next()]).allowed();
  }

  @Benchmark
  public boolean sluiceRelaxed() {
    return fx.sluiceRelaxed.tryAcquire(fx.keys[next()]).allowed();
  }

  @Benchmark
  public boolean bucket4jSelectForUpdate() {
    return fx.selectForUpdate[next()].tryConsume(1);
  }

  @Benchmark
  public boolean bucket4jAdvisoryLock() {
    return fx.advisoryLock[next()].tryConsume(1);
  }
}
