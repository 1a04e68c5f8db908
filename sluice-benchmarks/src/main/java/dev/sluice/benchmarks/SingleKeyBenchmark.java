package dev.sluice.benchmarks;

import com.google.common.util.concurrent.RateLimiter;
import dev.sluice.Decision;
import dev.sluice.memory.MemoryRateLimiter;
import io.github.bucket4j.local.LocalBucket;
import io.github.bucket4j.local.SynchronizationStrategy;
import io.github.resilience4j.ratelimiter.internal.AtomicRateLimiter;
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
 * One hot key in memory: Sluice's memory tier against Bucket4j's lock-free and synchronized local
 * buckets, Resilience4j's {@code AtomicRateLimiter} (timeout 0) and Guava's
 * {@code RateLimiter.tryAcquire()}, all token buckets of the same rate. {@code load=ALLOWED} never
 * empties the bucket; {@code load=REFUSED} refuses every check after the first. Every method returns
 * only whether the check passed; Sluice's through {@code tryConsume}, its verdict-only call (the
 * counterpart of Bucket4j's {@code tryConsume}). {@link #sluiceTryAcquire} reads
 * {@code tryAcquire(key).allowed()} and {@link #sluiceDecision} returns the whole {@link Decision},
 * to show what a caller pays for the decision object.
 *
 * <p>Run (1 and 2 threads, with bytes allocated per operation):
 * {@code java -jar sluice-benchmarks/target/benchmarks.jar SingleKeyBenchmark -t 1 -prof gc}
 * and the same with {@code -t 2}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class SingleKeyBenchmark {
  static final String KEY = "user:42";

  @Param({"ALLOWED", "REFUSED"})
  public Limiters.Load load;

  MemoryRateLimiter sluice;
  LocalBucket bucket4jLockFree;
  LocalBucket bucket4jSynchronized;
  AtomicRateLimiter resilience4j;
  RateLimiter guava;

  @Setup(Level.Trial)
  public void setUp() {
    sluice = Limiters.sluice(load, 16);
    bucket4jLockFree = Limiters.bucket4j(load, SynchronizationStrategy.LOCK_FREE);
    bucket4jSynchronized = Limiters.bucket4j(load, SynchronizationStrategy.SYNCHRONIZED);
    resilience4j = Limiters.resilience4j(load);
    guava = Limiters.guava(load);
    // Spend the first permit of the REFUSED buckets so every measured check is refused.
    sluice.tryAcquire(KEY);
    bucket4jLockFree.tryConsume(1);
    bucket4jSynchronized.tryConsume(1);
    resilience4j.acquirePermission();
    guava.tryAcquire();
  }

  @Benchmark
  public boolean sluice() {
    return sluice.tryConsume(KEY, 1);
  }

  @Benchmark
  public boolean sluiceTryAcquire() {
    return sluice.tryAcquire(KEY).allowed();
  }

  @Benchmark
  public Decision sluiceDecision() {
    return sluice.tryAcquire(KEY);
  }

  @Benchmark
  public boolean bucket4jLockFree() {
    return bucket4jLockFree.tryConsume(1);
  }

  @Benchmark
  public boolean bucket4jSynchronized() {
    return bucket4jSynchronized.tryConsume(1);
  }

  @Benchmark
  public boolean resilience4j() {
    return resilience4j.acquirePermission();
  }

  @Benchmark
  public boolean guava() {
    return guava.tryAcquire();
  }
}
