package dev.sluice.benchmarks;

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
 * Redis through each client library a Java team runs: Sluice's {@code RedisRateLimiter} (one EVALSHA
 * per decision) on Lettuce, on Jedis ({@code JedisTransport}) and on Redisson ({@code RedissonTransport}),
 * each beside Bucket4j's compare-and-swap proxy manager on the same library (GET, then an EVAL that
 * swaps if unchanged, retried on conflict), every check allowed. {@code keys=1} is one hot key;
 * {@code keys=10000} draws a key uniformly per check. {@link RedisClientsRun} runs it at 16 threads and
 * prints the ratios beside the load average.
 *
 * <p>Run (server from {@code SLUICE_REDIS_URL}, default {@code redis://127.0.0.1:6379}):
 * {@code java -cp sluice-benchmarks/target/benchmarks.jar dev.sluice.benchmarks.RedisClientsRun}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class RedisClientsBenchmark {
  @Param({"lettuce", "jedis", "redisson"})
  public String client;

  @Param({"1", "10000"})
  public int keys;

  RedisClientsFixture fx;

  @Setup(Level.Trial)
  public void setUp() {
    fx = new RedisClientsFixture(client, keys);
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    fx.close();
  }

  private int next() {
    return keys == 1 ? 0 : ThreadLocalRandom.current().nextInt(keys);
  }

  @Benchmark
  public boolean sluice() {
    return fx.sluice.tryAcquire(fx.keys[next()]).allowed();
  }

  @Benchmark
  public boolean bucket4j() {
    return fx.bucket4j[next()].tryConsume(1);
  }
}
