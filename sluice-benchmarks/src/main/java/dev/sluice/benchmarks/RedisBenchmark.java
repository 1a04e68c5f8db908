package dev.sluice.benchmarks;

import dev.sluice.Decision;
import dev.sluice.spi.StoreRateLimiter;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.ScriptOutputType;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Redis: Sluice's {@code RedisRateLimiter} (one EVALSHA per decision) against Bucket4j's Lettuce
 * proxy manager (compare-and-swap: a GET, then an EVAL that swaps if unchanged, retried on conflict),
 * on the same server, one connection each, every check allowed. {@code keys=1} is one hot key;
 * {@code keys=10000} draws a key uniformly per check. {@link #evalshaCeiling} is one EVALSHA of
 * {@code return 1} through Lettuce: the ceiling of any one-script-per-decision limiter on this client
 * and server. {@link #sluiceAsync} keeps {@value #IN_FLIGHT} decisions in flight on one thread (compare
 * with {@code redis-benchmark} running the same trivial EVALSHA, and with {@link #evalshaAsyncCeiling}).
 * Commands per decision are counted apart by {@link RedisCommandCount}.
 *
 * <p>Run (server from {@code SLUICE_REDIS_URL}, default {@code redis://127.0.0.1:6379}):
 * {@code java -jar sluice-benchmarks/target/benchmarks.jar RedisBenchmark -t 16} (and {@code -t 1}, {@code -t 2}).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class RedisBenchmark {
  static final int IN_FLIGHT = 64;

  @Param({"1", "10000"})
  public int keys;

  /** Sluice's request coalescing: 64 (the default) or 1 (off); {@code -p maxBatch=1,64} compares them in one run. */
  @Param({"64"})
  public int maxBatch = StoreRateLimiter.MAX_BATCH; // the default also when a test builds the state by hand

  RedisFixture fx;

  @Setup(Level.Trial)
  public void setUp() {
    fx = new RedisFixture(keys, maxBatch);
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

  @Benchmark
  public Object evalshaCeiling() {
    return fx.ceiling.sync().evalsha(fx.trivialSha, ScriptOutputType.INTEGER);
  }

  @Benchmark
  @OperationsPerInvocation(IN_FLIGHT)
  public int sluiceAsync() {
    @SuppressWarnings("unchecked")
    CompletableFuture<Decision>[] fs = new CompletableFuture[IN_FLIGHT];
    for (int i = 0; i < IN_FLIGHT; i++) {
      CompletionStage<Decision> s = fx.sluice.tryAcquireAsync(fx.keys[next()], 1);
      fs[i] = s.toCompletableFuture();
    }
    int allowed = 0;
    for (CompletableFuture<Decision> f : fs) {
      allowed += f.join().allowed() ? 1 : 0;
    }
    return allowed;
  }

  @Benchmark
  @OperationsPerInvocation(IN_FLIGHT)
  public int evalshaAsyncCeiling() throws Exception {
    @SuppressWarnings("unchecked")
    RedisFuture<Object>[] fs = new RedisFuture[IN_FLIGHT];
    for (int i = 0; i < IN_FLIGHT; i++) {
      fs[i] = fx.ceiling.async().evalsha(fx.trivialSha, ScriptOutputType.INTEGER);
    }
    int n = 0;
    for (RedisFuture<Object> f : fs) {
      n += f.get() != null ? 1 : 0;
    }
    return n;
  }
}
