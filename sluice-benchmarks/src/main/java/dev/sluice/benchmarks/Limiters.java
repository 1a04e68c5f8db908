package dev.sluice.benchmarks;

import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.LoadingCache;
import com.google.common.util.concurrent.RateLimiter;
import dev.sluice.Policy;
import dev.sluice.memory.MemoryRateLimiter;
import io.github.bucket4j.Bandwidth;
import io.github.bucket4j.Bucket;
import io.github.bucket4j.local.LocalBucket;
import io.github.bucket4j.local.SynchronizationStrategy;
import io.github.resilience4j.ratelimiter.RateLimiterConfig;
import io.github.resilience4j.ratelimiter.internal.AtomicRateLimiter;
import java.time.Duration;

/**
 * The limiters every benchmark compares, configured alike: a token bucket (or its library's
 * closest equivalent) that is either never empty ({@link Load#ALLOWED}) or empty after its first
 * permit ({@link Load#REFUSED}). One place, so each library gets the same limit.
 */
public final class Limiters {
  private Limiters() {}

  /** Whether the limit is generous enough that (almost) every check passes, or spent at once. */
  public enum Load {
    /** Capacity and refill of 10^9 per second: no thread on this machine can drain it. */
    ALLOWED(1_000_000_000L, 1_000_000_000L, Duration.ofSeconds(1)),
    /** Capacity 1, one permit per hour: every check after the first is refused. */
    REFUSED(1L, 1L, Duration.ofHours(1)),
    /**
     * Per-key limit of the keyed benchmarks: capacity 10^6, one permit back per second. A bucket that
     * was charged {@link #KEYED_SPEND} permits stays below full (so tracked, never reclaimable) for
     * that many seconds, and no benchmark run can empty it.
     */
    KEYED(1_000_000L, 1L, Duration.ofSeconds(1));

    /** What the keyed benchmarks charge each key when filling, so its state matters for ~17 minutes. */
    public static final long KEYED_SPEND = 1_000;

    final long capacity;
    final long refill;
    final Duration period;

    Load(long capacity, long refill, Duration period) {
      this.capacity = capacity;
      this.refill = refill;
      this.period = period;
    }

    double permitsPerSecond() {
      return (double) refill * 1e9 / period.toNanos();
    }
  }

  /** Sluice's token bucket for {@code load}. */
  public static Policy sluicePolicy(String name, Load load) {
    return Policy.tokenBucket(name, load.capacity, load.refill, load.period);
  }

  /** A Sluice memory tier tracking up to {@code maxKeys} keys. */
  public static MemoryRateLimiter sluice(Load load, int maxKeys) {
    return MemoryRateLimiter.builder(sluicePolicy("bench", load)).maxKeys(maxKeys).build();
  }

  /** Bucket4j's local bucket with greedy refill and its default (millisecond) clock. */
  public static LocalBucket bucket4j(Load load, SynchronizationStrategy strategy) {
    return Bucket.builder()
        .addLimit(Bandwidth.builder().capacity(load.capacity).refillGreedy(load.refill, load.period).build())
        .withSynchronizationStrategy(strategy)
        .build();
  }

  /** Resilience4j's lock-free limiter, failing at once instead of waiting (timeout 0). */
  public static AtomicRateLimiter resilience4j(Load load) {
    long limit = Math.min(Integer.MAX_VALUE, load.refill);
    RateLimiterConfig config = RateLimiterConfig.custom()
        .limitForPeriod((int) limit)
        .limitRefreshPeriod(load.period.multipliedBy(limit).dividedBy(load.refill))
        .timeoutDuration(Duration.ZERO)
        .build();
    return new AtomicRateLimiter("bench", config);
  }

  /** Guava's smooth-bursty limiter at the same rate (its burst is one second's worth). */
  public static RateLimiter guava(Load load) {
    return RateLimiter.create(load.permitsPerSecond());
  }

  /**
   * The recipe users write today for per-key limits in memory: a Caffeine cache of Bucket4j
   * lock-free buckets, bounded by size and expiring idle buckets.
   */
  public static LoadingCache<String, Bucket> caffeineOfBuckets(Load load, int maxKeys) {
    return Caffeine.newBuilder()
        .maximumSize(maxKeys)
        .expireAfterAccess(Duration.ofMinutes(10))
        .build(key -> bucket4j(load, SynchronizationStrategy.LOCK_FREE));
  }

  /** The keys of the keyed benchmarks: {@code "user:0"} to {@code "user:<n-1>"}. */
  public static String[] keys(int n) {
    String[] keys = new String[n];
    for (int i = 0; i < n; i++) {
      keys[i] = "user:" + i;
    }
    return keys;
  }
}
