package dev.sluice.benchmarks;

import dev.sluice.Policy;
import dev.sluice.redis.RedisRateLimiter;
import dev.sluice.spi.StoreRateLimiter;
import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.distributed.BucketProxy;
import io.github.bucket4j.distributed.ExpirationAfterWriteStrategy;
import io.github.bucket4j.redis.lettuce.Bucket4jLettuce;
import io.github.bucket4j.redis.lettuce.cas.LettuceBasedProxyManager;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.event.command.CommandListener;
import io.lettuce.core.event.command.CommandStartedEvent;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.LongAdder;

/**
 * Sluice's {@link RedisRateLimiter} and Bucket4j's Lettuce (compare-and-swap) proxy manager on the same
 * server, each on its own {@link RedisClient} whose commands are counted as they are sent. Both use
 * {@link Limiters.Load#ALLOWED} (every check allowed, so every check writes). Keys are private to one
 * fixture: Sluice's are hashed from a random policy name, Bucket4j's carry a random prefix and are
 * deleted by {@link #close()}; both expire on their own too.
 */
final class RedisFixture implements AutoCloseable {
  static final String URL = System.getenv().getOrDefault("SLUICE_REDIS_URL", "redis://127.0.0.1:6379");
  /** A trivial script: the server's own ceiling for one EVALSHA round trip. */
  static final String TRIVIAL_SCRIPT = "return 1";

  final RedisURI uri = RedisURI.create(URL);
  final String run = UUID.randomUUID().toString().substring(0, 8);
  final String[] keys;
  final RedisClient sluiceClient = RedisClient.create(uri);
  final RedisClient bucket4jClient = RedisClient.create(uri);
  final RedisClient ceilingClient = RedisClient.create(uri);
  final LongAdder sluiceCommands = counter(sluiceClient);
  final LongAdder bucket4jCommands = counter(bucket4jClient);
  final RedisRateLimiter sluice;
  final StatefulRedisConnection<byte[], byte[]> bucket4jConnection;
  final LettuceBasedProxyManager<byte[]> bucket4jManager;
  final BucketProxy[] bucket4j;
  final StatefulRedisConnection<String, String> ceiling;
  final String trivialSha;

  RedisFixture(int keyCount) {
    this(keyCount, StoreRateLimiter.MAX_BATCH);
  }

  /** {@code maxBatch} 1 turns Sluice's request coalescing off. */
  RedisFixture(int keyCount, int maxBatch) {
    keys = Limiters.keys(keyCount);
    Policy policy = Limiters.sluicePolicy("bench-" + run, Limiters.Load.ALLOWED);
    sluice = RedisRateLimiter.builder(policy, sluiceClient).timeout(Duration.ofSeconds(5)).maxBatch(maxBatch).build();
    bucket4jConnection = bucket4jClient.connect(ByteArrayCodec.INSTANCE);
    bucket4jManager = Bucket4jLettuce.casBasedBuilder(bucket4jConnection)
        .expirationAfterWrite(ExpirationAfterWriteStrategy.basedOnTimeForRefillingBucketUpToMax(Duration.ofSeconds(60)))
        .build();
    BucketConfiguration config = BucketConfiguration.builder()
        .addLimit(l -> l.capacity(Limiters.Load.ALLOWED.capacity).refillGreedy(Limiters.Load.ALLOWED.refill, Limiters.Load.ALLOWED.period))
        .build();
    bucket4j = new BucketProxy[keyCount];
    for (int i = 0; i < keyCount; i++) {
      bucket4j[i] = bucket4jManager.builder().build(bucket4jKey(i), () -> config);
    }
    ceiling = ceilingClient.connect(StringCodec.UTF8);
    trivialSha = ceiling.sync().scriptLoad(TRIVIAL_SCRIPT);
    if (!sluice.tryAcquire(keys[0]).allowed()) {
      throw new IllegalStateException("Sluice on " + URL + " refused a generous check: " + sluice.tryAcquire(keys[0]));
    }
  }

  byte[] bucket4jKey(int i) {
    return ("sluice-bench:" + run + ":" + keys[i]).getBytes(StandardCharsets.UTF_8);
  }

  private static LongAdder counter(RedisClient client) {
    LongAdder n = new LongAdder();
    client.addListener(new CommandListener() {
      @Override public void commandStarted(CommandStartedEvent event) {
        n.increment();
      }
    });
    return n;
  }

  /** True when the server answers PING within a second. */
  static boolean reachable() {
    RedisClient c = RedisClient.create(RedisURI.create(URL));
    try (StatefulRedisConnection<String, String> conn = c.connect()) {
      conn.setTimeout(Duration.ofSeconds(1));
      return "PONG".equals(conn.sync().ping());
    } catch (RuntimeException e) {
      return false;
    } finally {
      c.shutdown();
    }
  }

  @Override public void close() {
    try {
      for (int i = 0; i < keys.length; i += 500) {
        byte[][] batch = new byte[Math.min(500, keys.length - i)][];
        for (int j = 0; j < batch.length; j++) {
          batch[j] = bucket4jKey(i + j);
        }
        bucket4jConnection.sync().del(batch);
      }
    } finally {
      sluice.close();
      bucket4jConnection.close();
      ceiling.close();
      sluiceClient.shutdown();
      bucket4jClient.shutdown();
      ceilingClient.shutdown();
    }
  }
}
