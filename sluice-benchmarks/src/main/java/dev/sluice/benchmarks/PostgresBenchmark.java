package dev.sluice.benchmarks;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;

/**
 * PostgreSQL: Sluice's {@code JdbcRateLimiter} (one {@code INSERT ... ON CONFLICT DO UPDATE ...
 * RETURNING} per decision, autocommit), with durable commits and with relaxed durability
 * ({@code synchronous_commit = off} for its own transactions), against Bucket4j's select-for-update and
 * advisory-lock proxy managers (a transaction of several statements), on the same server, 16 pooled
 * connections each, every check allowed. {@code keys=1} is one hot key; {@code keys=10000} draws a
 * key uniformly per check; {@code sluiceUnlogged} is Sluice on an {@code UNLOGGED} table. Sluice coalesces
 * concurrent checks of one key into one batch statement ({@code maxBatch}, 1 turns it off). Statements
 * per decision are counted apart by {@link PostgresStatementCount}; the profile's baselines (the executor
 * hand-off, a bare write) are {@link PostgresProfileBenchmark}.
 *
 * <p>Run (server from {@code SLUICE_POSTGRES_URL}, default
 * {@code jdbc:postgresql://127.0.0.1:5432/test?user=postgres}):
 * {@code java -jar sluice-benchmarks/target/benchmarks.jar PostgresBenchmark -t 16} (and {@code -t 1}, {@code -t 2});
 * the hot key with coalescing on and off: {@code ... PostgresBenchmark -p keys=1 -p maxBatch=1,64 -t 16}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class PostgresBenchmark extends PostgresTrial {

  @Benchmark
  public boolean sluiceDurable() {
    return fx.sluice.tryAcquire(fx.keys[next()]).allowed();
  }

  @Benchmark
  public boolean sluiceRelaxed() {
    return fx.sluiceRelaxed.tryAcquire(fx.keys[next()]).allowed();
  }

  /** Durable commits, but on an {@code UNLOGGED} table: no WAL for the row (a server crash empties the table). */
  @Benchmark
  public boolean sluiceUnlogged() {
    return fx.sluiceUnlogged.tryAcquire(fx.keys[next()]).allowed();
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
