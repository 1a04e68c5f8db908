package dev.sluice.kernel;

import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.redis.RedisRateLimiter;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.codec.StringCodec;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * Counts in Redis ({@code sluice-redis}): a {@code RedisRateLimiter} per policy on one Lettuce client,
 * one Lua script per decision, time from the Redis server, so every instance shares one budget per
 * key. An unreachable server does not stop the store from opening: decisions follow the failure mode
 * until it answers.
 */
public final class RedisStore extends Store {
  /** How long a readiness probe waits when no store timeout was given. */
  private static final Duration DEFAULT_PROBE_TIMEOUT = Duration.ofSeconds(1);

  private final String where;
  private final AbstractRedisClient client;
  private final RedisURI uri;
  private final boolean owned;
  private final Function<Policy, FailureMode> failureModes;
  private final Duration timeout;
  private final List<RateLimiter> limiters = new CopyOnWriteArrayList<>();
  private StatefulConnection<String, String> aux;

  private RedisStore(String where, AbstractRedisClient client, RedisURI uri, boolean owned,
      Function<Policy, FailureMode> failureModes, Duration timeout) {
    this.where = where;
    this.client = client;
    this.uri = uri;
    this.owned = owned;
    this.failureModes = failureModes;
    this.timeout = timeout;
  }

  /**
   * A client of its own on {@code url}, shut down by {@link #close()}; {@code timeout} null keeps the
   * limiter's default. A {@code url} that is not a Redis URL is refused with a message that starts
   * with the (redacted) URL, for the caller to prefix with its setting's name.
   */
  public static RedisStore fromUrl(String url, Function<Policy, FailureMode> failureModes, Duration timeout) {
    RedisURI uri;
    try {
      uri = RedisURI.create(url);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException(redact(url) + " is not a Redis URL (" + e.getMessage()
          + "); write e.g. redis://127.0.0.1:6379 or redis://:password@host:6379/0");
    }
    return new RedisStore(redact(url), RedisClient.create(), uri, true, failureModes, timeout);
  }

  /**
   * On an application's client, standalone or cluster ({@code owned}: whether {@link #close()} shuts it
   * down); {@code uri} is where a standalone client connects (null: the client's own default, a
   * cluster's seeds); {@code timeout} null keeps the limiter's default.
   */
  public static RedisStore onClient(AbstractRedisClient client, RedisURI uri, boolean owned,
      Function<Policy, FailureMode> failureModes, Duration timeout) {
    if (!(client instanceof RedisClient) && !(client instanceof RedisClusterClient)) {
      throw new IllegalArgumentException("a Redis store runs on a RedisClient or a RedisClusterClient, not "
          + client.getClass().getName());
    }
    return new RedisStore(uri != null ? redact(uri.toString()) : "the application's client", client, uri, owned,
        failureModes, timeout);
  }

  @Override public String name() { return "redis"; }

  @Override public String describe() {
    return "Redis at " + where + " (shared by every instance; run Redis with maxmemory-policy noeviction)";
  }

  @Override public boolean shared() { return true; }

  @Override public RateLimiter limiter(Policy policy, RateLimitListener listener) {
    RedisRateLimiter.Builder b = client instanceof RedisClusterClient c ? RedisRateLimiter.builder(policy, c)
        : uri != null ? RedisRateLimiter.builder(policy, (RedisClient) client, uri)
        : RedisRateLimiter.builder(policy, (RedisClient) client);
    if (timeout != null) {
      b.timeout(timeout);
    }
    RateLimiter l = b.failureMode(failureModes.apply(policy)).issuer(issuer()).listener(listener, false).build();
    limiters.add(l);
    return l;
  }

  private long probeNanos() {
    return (timeout != null ? timeout : DEFAULT_PROBE_TIMEOUT).toNanos();
  }

  /** The store's own connection (the readiness probe), opened on first use and again after a failure. */
  private synchronized StatefulConnection<String, String> aux() throws Exception {
    if (aux == null || !aux.isOpen()) {
      if (aux != null) {
        aux.closeAsync();
      }
      aux = null;
      if (client instanceof RedisClusterClient c) {
        aux = c.connectAsync(StringCodec.UTF8).get(probeNanos(), TimeUnit.NANOSECONDS);
      } else if (uri != null) {
        aux = ((RedisClient) client).connectAsync(StringCodec.UTF8, uri).get(probeNanos(), TimeUnit.NANOSECONDS);
      } else {
        aux = ((RedisClient) client).connect(StringCodec.UTF8);
      }
    }
    return aux;
  }

  /** A PING on the store's own connection. */
  @Override public String probe() {
    return probeAnswer(() -> {
      StatefulConnection<String, String> c = aux();
      RedisFuture<String> pong = c instanceof StatefulRedisClusterConnection<String, String> cc ? cc.async().ping()
          : ((StatefulRedisConnection<String, String>) c).async().ping();
      String reply = pong.get(probeNanos(), TimeUnit.NANOSECONDS);
      if (!"PONG".equals(reply)) {
        throw new IllegalStateException("PING answered " + reply);
      }
      return reply;
    });
  }

  @Override public void close() {
    synchronized (this) {
      if (aux != null) {
        aux.close();
      }
    }
    for (RateLimiter l : limiters) {
      close(l);
    }
    if (owned) {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
  }
}
