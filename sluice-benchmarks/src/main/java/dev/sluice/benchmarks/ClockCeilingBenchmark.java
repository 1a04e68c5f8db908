package dev.sluice.benchmarks;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;

/**
 * The ceiling of any limiter that reads a clock: one {@link System#nanoTime()} per operation.
 * Sluice's single-key target is at least 75 % of this rate at one thread.
 *
 * <p>Run: {@code java -jar sluice-benchmarks/target/benchmarks.jar ClockCeilingBenchmark -t 1 -prof gc}
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class ClockCeilingBenchmark {

  @Benchmark
  public long nanoTime() {
    return System.nanoTime();
  }

  /** The clock Bucket4j's local buckets read by default (millisecond precision). */
  @Benchmark
  public long currentTimeMillis() {
    return System.currentTimeMillis();
  }
}
