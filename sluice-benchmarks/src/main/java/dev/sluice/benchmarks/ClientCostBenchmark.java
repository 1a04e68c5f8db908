package dev.sluice.benchmarks;

import dev.sluice.internal.StoredId;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;

/**
 * Client-side work the Redis and PostgreSQL backends do for every decision before any I/O, to
 * explain their client cost: {@link StoredId#key} (the SHA-256 id under which a key's state is
 * stored, computed per call with a fresh {@code MessageDigest}).
 *
 * <p>Run: {@code java -jar sluice-benchmarks/target/benchmarks.jar ClientCostBenchmark -prof gc}
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class ClientCostBenchmark {
  String policy = "bench";
  String key = "user:42";

  @Benchmark
  public String storedIdKey() {
    return StoredId.key(policy, key);
  }
}
