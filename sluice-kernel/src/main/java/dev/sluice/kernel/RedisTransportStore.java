package dev.sluice.kernel;

import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.redis.RedisRateLimiter;
import dev.sluice.redis.RedisTransport;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * Counts in Redis through another client than Lettuce: a {@code RedisRateLimiter} per policy on one
 * {@link RedisTransport} (sluice-redis-jedis, sluice-redis-redisson), the same scripts, keys and
 * stored format as {@link RedisStore}. The modules of those clients open it from their
 * {@link StoreFactory} ({@code redis-jedis}, {@code redis-redisson}); the kernel knows no client but Lettuce.
 */
public final class RedisTransportStore extends Store {
  /** What the readiness probe deletes: a key no limiter writes (a hash tag no stored id has). */
  static final String PROBE_KEY = "sluice:{probe}";
  private static final Duration DEFAULT_PROBE_TIMEOUT = Duration.ofSeconds(1);

  private final String name;
  private final String where;
  private final RedisTransport transport;
  private final AutoCloseable opened;
  private final Function<Policy, FailureMode> failureModes;
  private final Duration timeout;
  private final List<RateLimiter> limiters = new CopyOnWriteArrayList<>();

  /**
   * A store named {@code name} at {@code where} (no password) on {@code transport}; {@link #close()}
   * closes its limiters, then {@code opened} (the transport and the client the factory opened);
   * {@code timeout} null keeps the limiter's default.
   */
  public RedisTransportStore(String name, String where, RedisTransport transport, AutoCloseable opened,
                             Function<Policy, FailureMode> failureModes, Duration timeout) {
    this.name = name;
    this.where = redact(where);
    this.transport = transport;
    this.opened = opened;
    this.failureModes = failureModes;
    this.timeout = timeout;
  }

  @Override public String name() {
    return name;
  }

  @Override public String describe() {
    return "Redis at " + where + " through " + name + " (shared by every instance; run Redis with maxmemory-policy noeviction)";
  }

  @Override public boolean shared() {
    return true;
  }

  @Override public RateLimiter limiter(Policy policy, RateLimitListener listener) {
    RedisRateLimiter.Builder b = RedisRateLimiter.builder(policy, transport);
    if (timeout != null) {
      b.timeout(timeout);
    }
    RateLimiter l = b.failureMode(failureModes.apply(policy)).issuer(issuer()).listener(listener, false).build();
    limiters.add(l);
    return l;
  }

  /** A {@code DEL} of a key no limiter uses, within the store's timeout: it decides and counts nothing. */
  @Override public String probe() {
    return probeAnswer(() -> transport.del(PROBE_KEY).get((timeout != null ? timeout : DEFAULT_PROBE_TIMEOUT).toNanos(),
        TimeUnit.NANOSECONDS));
  }

  @Override public void close() {
    for (RateLimiter l : limiters) {
      close(l);
    }
    try {
      opened.close();
    } catch (Exception ignored) {
      // the store is closed either way
    }
  }
}
