package dev.sluice.redis;

import dev.sluice.testing.ManualTicker;
import dev.sluice.KeyOverrides;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Ticket;
import dev.sluice.internal.AdminCalls;
import dev.sluice.internal.Checks;
import dev.sluice.redis.internal.RedisPlan;
import dev.sluice.spi.ForwardingStoreRateLimiter;
import dev.sluice.spi.StoreRateLimiter;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.codec.StringCodec;
import java.time.Duration;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * A {@link RateLimiter} whose state lives in Redis: every decision, refund and peek is exactly one
 * EVALSHA of the algorithm's Lua script, which reads the state, computes the reference step function
 * ({@code dev.sluice.model.ReferenceModel}) and writes the new state with its TTL, atomically.
 *
 * <pre>{@code
 * RedisClient client = RedisClient.create("redis://127.0.0.1:6379");
 * RedisRateLimiter limiter = RedisRateLimiter.builder(Policy.tokenBucket("api", 100, 10, Duration.ofSeconds(1)), client)
 *     .timeout(Duration.ofMillis(50))
 *     .failureMode(FailureMode.closed())
 *     .build();
 * Decision d = limiter.tryAcquire("user:42");
 * }</pre>
 *
 * <ul>
 *   <li><b>Keys.</b> The state of {@code key} under policy {@code p} is stored at
 *       {@code sluice:{<StoredId.key(p, key)>}}: a SHA-256 id, never the raw key or policy name; the hash
 *       tag is the whole id, so every script touches one cluster slot.
 *   <li><b>Time.</b> By default the script reads the Redis server's clock ({@code TIME}), so the clocks
 *       of application instances cannot disagree. {@link Builder#ticker(dev.sluice.Ticker)} supplies a clock
 *       instead; a reading of it that lags the clock's own earlier readings by more than
 *       {@link Builder#expiryGrace} is refused with {@link Reason#INVALID_CLOCK}, since Redis may by then
 *       have expired a state that reading still counts.
 *   <li><b>Expiry.</b> Every write sets a TTL ending when the state can no longer matter
 *       ({@code ReferenceModel.expiresAt}), plus {@link Builder#expiryGrace} and, on a supplied clock, the
 *       timeout; run Redis with {@code maxmemory-policy noeviction}.
 *   <li><b>Failure.</b> Every call has a deadline ({@link #DEFAULT_TIMEOUT} unless set). A refused or lost
 *       connection, a timeout, a frozen server, a script error or a corrupt stored value becomes a
 *       {@link dev.sluice.Decision} under the {@link dev.sluice.FailureMode}; nothing is thrown for store trouble.
 *   <li><b>Algorithms.</b> All five: fixed window, sliding window, token bucket and GCRA keep one short
 *       string per key; the exact sliding log keeps a sorted set with one entry per admitted request in
 *       the window, and reads them all on each call, so it suits small limits.
 * </ul>
 * Validation, the clock, deadlines, the failure mode, tickets and listener events are the core's one
 * {@link StoreRateLimiter} pipeline, as for every store-backed limiter; the script call is this
 * module's backend, and the Redis client is behind a {@link RedisTransport} (Lettuce's built in,
 * another client's through {@link #builder(Policy, RedisTransport)}). Thread-safe. Closing the
 * limiter closes the connection it opened itself, never one it was given.
 */
public final class RedisRateLimiter extends ForwardingStoreRateLimiter implements KeyOverrides {
  /** Deadline of every Redis call unless {@link Builder#timeout(Duration)} says otherwise: 100 ms. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofMillis(100);

  /** The default and largest {@code maxBatch}: {@link StoreRateLimiter#MAX_BATCH}. */
  public static final int MAX_BATCH = StoreRateLimiter.MAX_BATCH;

  /**
   * Extra TTL when the limiter runs on a supplied {@link dev.sluice.Ticker} (default 1 s): keys outlive
   * their state by this much so that application clocks that disagree by up to this much cannot expire
   * a state another instance still counts, and a supplied clock may fall this far behind real time,
   * against its own earlier readings, before its readings are refused ({@link Builder#expiryGrace}).
   * With the server clock there is one clock and no grace.
   */
  public static final Duration DEFAULT_SUPPLIED_CLOCK_GRACE = Duration.ofSeconds(1);

  final RedisBackend backend; // package-private for tests: its transport
  private final long timeoutNanos;

  private RedisRateLimiter(RedisBackend backend, StoreRateLimiter limiter, Duration timeout) {
    super(limiter);
    this.backend = backend;
    this.timeoutNanos = timeout.toNanos();
  }

  // ---------------------------------------------------------------------------------------------
  // Per-key overrides
  // ---------------------------------------------------------------------------------------------

  /**
   * Pins {@code policy} as {@code key}'s configuration under its name ({@link KeyOverrides#override}).
   *
   * <p>On Redis the override is a key beside the state ({@code sluice:{id}:o}, the same hash tag, so
   * the same Cluster slot), which every decision script reads in the same run: one round trip per
   * decision still, except that an override of another algorithm than the caller's costs a second
   * one (the first script answers with the override, the override's script decides). It has no TTL:
   * the count expires as always, the override stays until cleared. {@link #reset} keeps it.
   *
   * @throws dev.sluice.spi.StoreException when Redis does not answer within the timeout, or fails
   */
  @Override public void override(String key, Policy policy) {
    Checks.key(key);
    RedisPlan.of(Checks.notNull("policy", policy)); // every valid policy runs on Redis
    AdminCalls.run("Redis: override of a key", () -> backend.override(policy, key, policy, deadline()));
  }

  @Override public boolean clearOverride(String key, Policy policy) {
    Checks.key(key);
    Checks.notNull("policy", policy);
    return AdminCalls.run("Redis: clearing a key's override", () -> backend.override(policy, key, null, deadline()));
  }

  @Override public Optional<Policy> overrideOf(String key, Policy policy) {
    Checks.key(key);
    Checks.notNull("policy", policy);
    return Optional.ofNullable(AdminCalls.run("Redis: reading a key's override", () -> backend.override(policy, key, deadline())));
  }

  private long deadline() {
    return System.nanoTime() + timeoutNanos;
  }

  // ---------------------------------------------------------------------------------------------
  // Builders
  // ---------------------------------------------------------------------------------------------

  /** A limiter on a connection it opens from {@code client} (its default URI) and reopens after an outage. */
  public static Builder builder(Policy policy, RedisClient client) {
    Checks.notNull("client", client);
    return new Builder(policy, () -> client.connect(StringCodec.UTF8), client, null);
  }

  /** A limiter on a connection it opens from {@code client} to {@code uri} (standalone or Sentinel URI). */
  public static Builder builder(Policy policy, RedisClient client, RedisURI uri) {
    Checks.notNull("client", client);
    Checks.notNull("uri", uri);
    return new Builder(policy, () -> client.connect(StringCodec.UTF8, uri), client, null);
  }

  /** A limiter on a Redis Cluster connection it opens from {@code client}. */
  public static Builder builder(Policy policy, RedisClusterClient client) {
    Checks.notNull("client", client);
    return new Builder(policy, () -> client.connect(StringCodec.UTF8), client, null);
  }

  /** A limiter on the caller's connection, which it uses as is and never closes. */
  public static Builder builder(Policy policy, StatefulRedisConnection<String, String> connection) {
    return new Builder(policy, null, null, Checks.notNull("connection", connection));
  }

  /** A limiter on the caller's cluster connection, which it uses as is and never closes. */
  public static Builder builder(Policy policy, StatefulRedisClusterConnection<String, String> connection) {
    return new Builder(policy, null, null, Checks.notNull("connection", connection));
  }

  /**
   * A limiter on another Redis client, through its adapter ({@link RedisTransport}): the same
   * scripts, keys, clock and stored format as on Lettuce. The limiter never closes the transport.
   */
  public static Builder builder(Policy policy, RedisTransport transport) {
    Builder b = new Builder(policy, null, null, null);
    b.transport = Checks.notNull("transport", transport);
    return b;
  }

  /**
   * Settings of a {@link RedisRateLimiter}: those of every store-backed limiter ({@link StoreRateLimiter.Settings}: ({@code timeout},
   * default {@link #DEFAULT_TIMEOUT}; {@code failureMode}; {@code ticker}, default the Redis server's
   * {@code TIME}; {@code listener}) and {@link #expiryGrace}. Fails fast on bad values.
   */
  public static final class Builder extends StoreRateLimiter.Settings<Builder> {
    private final Supplier<StatefulConnection<String, String>> connector;
    private final AbstractRedisClient client;
    private final StatefulConnection<String, String> borrowed;
    private RedisTransport transport;
    private Duration expiryGrace;

    private Builder(Policy policy, Supplier<StatefulConnection<String, String>> connector, AbstractRedisClient client,
                    StatefulConnection<String, String> borrowed) {
      super(policy, DEFAULT_TIMEOUT);
      this.connector = connector;
      this.client = client;
      this.borrowed = borrowed;
    }

    @Override protected Builder self() {
      return this;
    }

    /**
     * How much longer than its state can matter a key lives in Redis (default 0 with the server clock,
     * {@link #DEFAULT_SUPPLIED_CLOCK_GRACE} with a supplied ticker; on a supplied ticker the key lives
     * the timeout longer still). Only memory is traded: a state past its expiry decides exactly like
     * an absent one.
     *
     * <p>On a supplied ticker it is also how far the ticker may fall behind: Redis expires keys on its
     * own clock, so a ticker that advances more slowly than real time (a {@code ManualTicker} a test
     * moves by hand, a clock stepped back) could count a state Redis has already dropped, and admit
     * more than the limit. A reading that lags the ticker's earlier readings by more than the grace,
     * measured against {@link System#nanoTime()} over the lifetimes of the states this limiter wrote,
     * is refused with {@link Reason#INVALID_CLOCK} (whatever the failure mode) until the ticker catches
     * up or every such state has ended. A test suite that runs on a manual ticker over Redis sets a
     * grace longer than its wall time, or advances its ticker with the wall clock. Instances whose
     * clocks disagree are a matter of the grace as before: keep their skew within it.
     */
    public Builder expiryGrace(Duration grace) {
      Checks.notNull("expiryGrace", grace);
      if (grace.isNegative()) {
        throw new IllegalArgumentException("expiryGrace " + grace + " is negative; use Duration.ZERO or more");
      }
      this.expiryGrace = grace;
      return this;
    }

    boolean supplied() {
      return suppliedTicker() != null;
    }

    /**
     * Builds the limiter; every policy that can be built runs on Redis. An unreachable server does not
     * fail the build, which waits at most 2 s for a first connection it opens itself (less when the
     * connection fails sooner) and logs one warning when it has none: decisions follow the failure mode
     * until the server answers, and the limiter tries a connection every 25 ms until then, whether or
     * not decisions are asking, so it decides on Redis as soon as Redis answers.
     */
    public RedisRateLimiter build() {
      RedisPlan.of(policy); // every valid policy compiles; before any connection is opened
      boolean supplied = supplied();
      Duration grace = expiryGrace != null ? expiryGrace : supplied ? DEFAULT_SUPPLIED_CLOCK_GRACE : Duration.ZERO;
      boolean owned = transport == null;
      RedisTransport t = !owned ? transport
          : new LettuceTransport(borrowed != null ? new RedisLink.Borrowed(borrowed) : new RedisLink.Owned(connector, client));
      String description = "RedisRateLimiter[policy=" + policy.name() + ", algorithm=" + policy.algorithm().id()
          + ", timeout=" + timeout() + ", clock=" + (supplied ? "supplied" : "server") + "]";
      RedisBackend backend = new RedisBackend(t, owned, grace, supplied, timeout().toNanos(), description);
      return new RedisRateLimiter(backend, pipeline(backend), timeout());
    }
  }

  /**
   * Closes the connection this limiter opened, at any moment: a connection attempt still pending is
   * waited for (at most 2 s, never interrupted) and what it connected closed, so the client may be shut
   * down as soon as this returns. A connection or transport it was given stays open. Decisions then
   * fail per the failure mode.
   */
  @Override public void close() {
    super.close();
  }

  /** The Redis key holding {@code key}'s state under {@code policy}: its name and the key, nothing else. */
  static String storedKey(Policy policy, String key) {
    return RedisPlan.storedKey(policy, key);
  }

  /** Where a ticket applied to the budget stored at {@code stored} is recorded as spent. */
  static String spentKey(String stored, Ticket ticket) {
    return RedisPlan.spentKey(stored, ticket);
  }
}
