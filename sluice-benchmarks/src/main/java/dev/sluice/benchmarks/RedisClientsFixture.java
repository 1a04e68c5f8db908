package dev.sluice.benchmarks;

import dev.sluice.Policy;
import dev.sluice.redis.RedisRateLimiter;
import dev.sluice.redis.jedis.JedisTransport;
import dev.sluice.redis.redisson.RedissonTransport;
import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.distributed.BucketProxy;
import io.github.bucket4j.distributed.ExpirationAfterWriteStrategy;
import io.github.bucket4j.distributed.proxy.ProxyManager;
import io.github.bucket4j.redis.jedis.Bucket4jJedis;
import io.github.bucket4j.redis.redisson.Bucket4jRedisson;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.apache.commons.pool2.impl.GenericObjectPoolConfig;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import redis.clients.jedis.Connection;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;

/**
 * Sluice's {@link RedisRateLimiter} and Bucket4j's compare-and-swap proxy manager on one Redis client
 * library, {@code lettuce}, {@code jedis} or {@code redisson}, each on a client of its own built the
 * same way (as {@link RedisFixture} does for Lettuce, which this reuses). Every check is allowed
 * ({@link Limiters.Load#ALLOWED}); keys are private to the fixture (a random policy name, a random
 * Bucket4j prefix deleted by {@link #close()}).
 *
 * <p>Jedis: a {@code RedisClient} pooling {@value #JEDIS_POOL} connections for each library, and
 * Sluice's {@code JedisTransport} on as many lanes, so that neither waits for a connection at 16
 * threads. Redisson: single-server clients with Redisson's default pool (64).
 */
final class RedisClientsFixture implements AutoCloseable {
  static final List<String> CLIENTS = List.of("lettuce", "jedis", "redisson");
  static final int JEDIS_POOL = 16;

  final String run = UUID.randomUUID().toString().substring(0, 8);
  final String[] keys;
  final RedisRateLimiter sluice;
  final BucketProxy[] bucket4j;
  private final List<AutoCloseable> closers = new ArrayList<>();
  private Runnable deleteBucket4jKeys = () -> { };

  RedisClientsFixture(String client, int keyCount) {
    if (!CLIENTS.contains(client)) {
      throw new IllegalArgumentException("client '" + client + "' is not one of " + CLIENTS);
    }
    Policy policy = Limiters.sluicePolicy("bench-" + run, Limiters.Load.ALLOWED);
    BucketConfiguration config = BucketConfiguration.builder()
        .addLimit(l -> l.capacity(Limiters.Load.ALLOWED.capacity).refillGreedy(Limiters.Load.ALLOWED.refill, Limiters.Load.ALLOWED.period))
        .build();
    ExpirationAfterWriteStrategy expiry = ExpirationAfterWriteStrategy.basedOnTimeForRefillingBucketUpToMax(Duration.ofSeconds(60));
    bucket4j = new BucketProxy[keyCount];
    switch (client) {
      case "lettuce" -> {
        RedisFixture fx = new RedisFixture(keyCount);
        closers.add(fx);
        keys = fx.keys;
        sluice = fx.sluice;
        System.arraycopy(fx.bucket4j, 0, bucket4j, 0, keyCount);
      }
      case "jedis" -> {
        keys = Limiters.keys(keyCount);
        UnifiedJedis forSluice = jedis();
        UnifiedJedis forBucket4j = jedis();
        JedisTransport transport = JedisTransport.of(forSluice, JEDIS_POOL);
        sluice = RedisRateLimiter.builder(policy, transport).timeout(Duration.ofSeconds(5)).build();
        closers.add(sluice);
        closers.add(transport::close);
        closers.add(forSluice);
        closers.add(forBucket4j);
        ProxyManager<byte[]> manager = Bucket4jJedis.casBasedBuilder(forBucket4j).expirationAfterWrite(expiry).build();
        for (int i = 0; i < keyCount; i++) {
          bucket4j[i] = manager.builder().build(bucket4jKey(i).getBytes(StandardCharsets.UTF_8), () -> config);
        }
        deleteBucket4jKeys = () -> {
          for (int i = 0; i < keyCount; i++) {
            forBucket4j.del(bucket4jKey(i));
          }
        };
      }
      default -> {
        keys = Limiters.keys(keyCount);
        RedissonClient forSluice = redisson();
        RedissonClient forBucket4j = redisson();
        RedissonTransport transport = RedissonTransport.of(forSluice);
        sluice = RedisRateLimiter.builder(policy, transport).timeout(Duration.ofSeconds(5)).build();
        closers.add(sluice);
        closers.add(transport::close);
        closers.add(forSluice::shutdown);
        closers.add(forBucket4j::shutdown);
        ProxyManager<String> manager = Bucket4jRedisson.casBasedBuilder(((Redisson) forBucket4j).getCommandExecutor())
            .expirationAfterWrite(expiry).build();
        for (int i = 0; i < keyCount; i++) {
          bucket4j[i] = manager.builder().build(bucket4jKey(i), () -> config);
        }
        deleteBucket4jKeys = () -> {
          String[] all = new String[keyCount];
          for (int i = 0; i < keyCount; i++) {
            all[i] = bucket4jKey(i);
          }
          forBucket4j.getKeys().delete(all);
        };
      }
    }
    if (!sluice.tryAcquire(keys[0]).allowed() || !bucket4j[0].tryConsume(1)) {
      throw new IllegalStateException(client + " on " + RedisFixture.URL + " refused a generous check");
    }
  }

  private String bucket4jKey(int i) {
    return "sluice-bench:" + run + ":" + keys[i];
  }

  private static UnifiedJedis jedis() {
    URI u = URI.create(RedisFixture.URL);
    GenericObjectPoolConfig<Connection> pool = new GenericObjectPoolConfig<>();
    pool.setMaxTotal(JEDIS_POOL);
    pool.setMaxIdle(JEDIS_POOL);
    return RedisClient.builder().hostAndPort(u.getHost(), u.getPort()).poolConfig(pool).build();
  }

  private static RedissonClient redisson() {
    Config c = new Config();
    c.useSingleServer().setAddress(RedisFixture.URL);
    return Redisson.create(c);
  }

  @Override public void close() {
    try {
      deleteBucket4jKeys.run();
    } finally {
      for (AutoCloseable c : closers) {
        try {
          c.close();
        } catch (Exception e) {
          System.err.println("closing the fixture: " + e);
        }
      }
    }
  }
}
