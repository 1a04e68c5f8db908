package dev.sluice.benchmarks;

import com.github.benmanes.caffeine.cache.LoadingCache;
import dev.sluice.memory.MemoryRateLimiter;
import io.github.bucket4j.Bucket;
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

/**
 * Many keys in memory: each operation checks a key drawn uniformly from {@code keys} (100,000 by
 * default), against Sluice's {@link MemoryRateLimiter} (room for every key) and the recipe users write
 * today, a Caffeine cache of Bucket4j lock-free buckets (same bound, buckets expiring after 10 idle
 * minutes). Both are filled with every key before measuring, so the measurement is of tracked keys,
 * not of first sightings. The limit ({@code KEYED}: capacity 10^6, one permit a second, each key charged 1,000 when filled)
 * keeps every key tracked and every check allowed: the cost is the lookup and the step.
 * Heap per tracked key is measured apart, by {@link HeapPerKey}.
 *
 * <p>Run: {@code java -jar sluice-benchmarks/target/benchmarks.jar KeyedBenchmark -t 1 -prof gc}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class KeyedBenchmark {

  @Param({"100000"})
  public int keys;

  String[] keyNames;
  MemoryRateLimiter sluice;
  LoadingCache<String, Bucket> caffeineOfBuckets;

  @Setup(Level.Trial)
  public void setUp() {
    keyNames = Limiters.keys(keys);
    sluice = Limiters.sluice(Limiters.Load.KEYED, keys);
    caffeineOfBuckets = Limiters.caffeineOfBuckets(Limiters.Load.KEYED, keys);
    for (String k : keyNames) {
      if (!sluice.tryAcquire(k, Limiters.Load.KEYED_SPEND).allowed()) {
        throw new IllegalStateException("Sluice refused " + k + ": the table should have room for every key");
      }
      caffeineOfBuckets.get(k).tryConsume(Limiters.Load.KEYED_SPEND);
    }
    caffeineOfBuckets.cleanUp();
  }

  private String nextKey() {
    return keyNames[ThreadLocalRandom.current().nextInt(keyNames.length)];
  }

  @Benchmark
  public boolean sluice() {
    return sluice.tryAcquire(nextKey()).allowed();
  }

  @Benchmark
  public boolean caffeineOfBucket4j() {
    return caffeineOfBuckets.get(nextKey()).tryConsume(1);
  }

  /** The cost of drawing the key alone, to subtract mentally from both. */
  @Benchmark
  public String keyDrawOnly() {
    return nextKey();
  }
}
