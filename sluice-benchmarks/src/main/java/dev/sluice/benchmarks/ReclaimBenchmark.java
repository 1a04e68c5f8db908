package dev.sluice.benchmarks;

import dev.sluice.Policy;
import dev.sluice.memory.MemoryRateLimiter;
import java.time.Duration;
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
 * The memory tier's reclaim scan with a full table: what the scan costs the checks around it.
 *
 * <p>20,000 keys cycle through a 10,000-key table, so the table is always full and half the checks
 * are for untracked keys. {@code FULL_EXPIRING}: 20 ms fixed windows, so entries expire all the time
 * and the scan (aimed at the earliest expiry, at most once per 50 ms) runs as often as it may, each
 * time over the whole table. {@code FULL_NEVER_EXPIRING}: 1 h windows, the same full table and the
 * same refusals, but no scan ever runs. Their ratio is the amortized cost of scanning; the tear-down
 * prints how many scans ran.
 *
 * <p>Run: {@code java -jar sluice-benchmarks/target/benchmarks.jar ReclaimBenchmark -t 1 -prof gc}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class ReclaimBenchmark {
  static final int TABLE = 10_000;
  static final int KEYS = 20_000;

  public enum Scenario { FULL_EXPIRING, FULL_NEVER_EXPIRING }

  @Param({"FULL_EXPIRING", "FULL_NEVER_EXPIRING"})
  public Scenario scenario;

  MemoryRateLimiter limiter;
  String[] keys;
  long started;

  @Setup(Level.Trial)
  public void setUp() {
    Duration window = scenario == Scenario.FULL_EXPIRING ? Duration.ofMillis(20) : Duration.ofHours(1);
    limiter = MemoryRateLimiter.builder(Policy.fixedWindow("reclaim", 1_000_000, window)).maxKeys(TABLE).build();
    keys = new String[KEYS];
    for (int i = 0; i < KEYS; i++) {
      keys[i] = "client:" + i;
      limiter.tryConsume(keys[i], 1);
    }
    started = System.nanoTime();
  }

  @TearDown(Level.Trial)
  public void report() {
    double seconds = (System.nanoTime() - started) / 1e9;
    System.out.printf("%n%s: %d reclaim scans in %.1f s (%.1f/s), %d keys tracked of %d%n", scenario,
        limiter.reclaimScans(), seconds, limiter.reclaimScans() / seconds, limiter.trackedKeys(), TABLE);
  }

  @State(Scope.Thread)
  public static class Cursor {
    int next;
  }

  @Benchmark
  public boolean check(Cursor c) {
    int i = c.next;
    c.next = i + 1 == KEYS ? 0 : i + 1;
    return limiter.tryConsume(keys[i], 1);
  }
}
