package dev.sluice.server;

import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.redis.RedisRateLimiter;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import java.time.Duration;
import java.util.List;
import java.util.function.Function;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Counts in Redis ({@code sluice-redis}): one Lua script per decision, time from the Redis server,
 * so every instance of the service shares one budget per key. Every algorithm, the sliding log included. An unreachable server does not stop
 * the service from starting: decisions follow the failure mode until it answers.
 */
final class RedisStore extends Store {
  private final String url;
  private final RedisURI uri;
  private final RedisClient client;
  private final Function<Policy, FailureMode> failureModes;
  private final Duration timeout;
  private final List<RedisRateLimiter> limiters = new CopyOnWriteArrayList<>();
  private StatefulRedisConnection<String, String> aux;
  static final String SPENT_PREFIX = "sluice:spent:";

  RedisStore(String url, Function<Policy, FailureMode> failureModes, Duration timeout) {
    this.url = url;
    try {
      this.uri = RedisURI.create(url);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("--redis " + redact(url) + " is not a Redis URL (" + e.getMessage()
          + "); write e.g. redis://127.0.0.1:6379 or redis://:password@host:6379/0");
    }
    this.failureModes = failureModes;
    this.timeout = timeout;
    this.client = RedisClient.create();
  }

  @Override String name() { return "redis"; }

  @Override String describe() {
    return "Redis at " + redact(url) + " (shared by every instance; run Redis with maxmemory-policy noeviction)";
  }

  @Override boolean shared() { return true; }

  @Override RateLimiter limiter(Policy policy, RateLimitListener listener) {
    RedisRateLimiter l = RedisRateLimiter.builder(policy, client, uri).timeout(timeout).failureMode(failureModes.apply(policy))
        .issuer(issuer).listener(listener, false).build();
    limiters.add(l);
    return l;
  }

  /** The store's own connection (readiness probe, spent tickets), opened on first use and again after a failure. */
  private synchronized StatefulRedisConnection<String, String> aux() throws Exception {
    if (aux == null || !aux.isOpen()) {
      if (aux != null) {
        aux.closeAsync();
      }
      aux = null;
      aux = client.connectAsync(StringCodec.UTF8, uri).get(timeout.toNanos(), TimeUnit.NANOSECONDS);
    }
    return aux;
  }

  /** A PING on the store's own connection. */
  @Override String probe() {
    try {
      return "PONG".equals(aux().async().ping().get(timeout.toNanos(), TimeUnit.NANOSECONDS)) ? null : "store_unavailable";
    } catch (TimeoutException e) {
      return "timeout";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "store_unavailable";
    } catch (Exception e) {
      return "store_unavailable";
    }
  }

  /**
   * Spent tickets as Redis keys {@code sluice:spent:<ticket id>}, set with {@code SET NX} and a TTL to
   * the ticket's expiry, so that of all instances exactly one marks a ticket, and Redis forgets it
   * when it could no longer refund anyway.
   */
  @Override SpentSet spentSet(int capacity) {
    return new SpentSet() {
      @Override public Mark mark(String id, long expiresAtMicros, long nowMicros) {
        long ttlMillis = Math.max(1, (expiresAtMicros - nowMicros + 999) / 1000);
        try {
          String r = aux().async().set(SPENT_PREFIX + id, "1", SetArgs.Builder.nx().px(ttlMillis))
              .get(timeout.toNanos(), TimeUnit.NANOSECONDS);
          return "OK".equals(r) ? Mark.MARKED : Mark.ALREADY_SPENT;
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return Mark.FAILED;
        } catch (Exception e) {
          return Mark.FAILED;
        }
      }

      @Override public void unmark(String id) {
        try {
          aux().async().del(SPENT_PREFIX + id).get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        } catch (Exception e) {
          // The ticket stays spent: a refund then cannot be retried, which is the stricter side.
        }
      }
    };
  }

  @Override public void close() {
    synchronized (this) {
      if (aux != null) {
        aux.close();
      }
    }
    for (RedisRateLimiter l : limiters) {
      l.close();
    }
    client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
  }
}
