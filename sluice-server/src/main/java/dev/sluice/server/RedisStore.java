package dev.sluice.server;

import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.redis.RedisRateLimiter;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
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

  /** The store's own connection (the readiness probe), opened on first use and again after a failure. */
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
