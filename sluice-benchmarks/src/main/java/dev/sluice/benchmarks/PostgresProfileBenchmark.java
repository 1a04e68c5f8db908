package dev.sluice.benchmarks;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;

/**
 * Baselines for profiling {@link PostgresBenchmark} (issue 18), on the same fixture: Sluice relaxed with
 * its statement run on the calling thread ({@code sluiceRelaxedInline}: the executor hand-off removed, and
 * the deadline with it, so only meaningful at one thread), and the floor of a write, a bare one-row
 * {@code UPDATE ... SET n = n + 1} per call in autocommit, durable and relaxed (what one write costs the
 * server, which no single-statement limiter can beat on one row without coalescing).
 *
 * <p>Run: {@code java -jar sluice-benchmarks/target/benchmarks.jar 'Postgres(Profile)?Benchmark' -p keys=1 -t 1}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class PostgresProfileBenchmark extends PostgresTrial {

  /** {@code PostgresBenchmark.sluiceRelaxed} with the statement run on the calling thread: no executor hand-off. */
  @Benchmark
  public boolean sluiceRelaxedInline() {
    return fx.sluiceRelaxedInline.tryAcquire(fx.keys[next()]).allowed();
  }

  /** The floor of a durable write: one bare {@code UPDATE ... SET n = n + 1} of the key's row per call. */
  @Benchmark
  public boolean floorUpdateDurable() {
    return fx.floorUpdate(fx.sluicePool, next(), false);
  }

  /** The floor of a relaxed write ({@code synchronous_commit = off} for its transaction, as Sluice sets it). */
  @Benchmark
  public boolean floorUpdateRelaxed() {
    return fx.floorUpdate(fx.sluiceRelaxedPool, next(), true);
  }
}
