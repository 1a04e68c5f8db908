package dev.sluice.redis;

import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Ticket;
import dev.sluice.internal.Checks;
import dev.sluice.internal.ClockLag;
import dev.sluice.internal.ModelSteps;
import dev.sluice.internal.StoredId;
import dev.sluice.spi.StepResult;
import dev.sluice.spi.StoreBackedRateLimiter;
import dev.sluice.spi.StoreException;
import dev.sluice.spi.StoreNotReachedException;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.codec.StringCodec;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
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
 * Validation, the clock, deadlines, the failure mode, tickets and listener events are
 * {@link StoreBackedRateLimiter}'s, as for every store-backed limiter; this class is the script call.
 * Thread-safe. Closing the limiter closes the connection it opened itself, never one it was given.
 */
public final class RedisRateLimiter extends StoreBackedRateLimiter<RedisPlan> implements AutoCloseable {
  /** Deadline of every Redis call unless {@link Builder#timeout(Duration)} says otherwise: 100 ms. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofMillis(100);

  /**
   * Extra TTL when the limiter runs on a supplied {@link dev.sluice.Ticker} (default 1 s): keys outlive
   * their state by this much so that application clocks that disagree by up to this much cannot expire
   * a state another instance still counts, and a supplied clock may fall this far behind real time,
   * against its own earlier readings, before its readings are refused ({@link Builder#expiryGrace}).
   * With the server clock there is one clock and no grace.
   */
  public static final Duration DEFAULT_SUPPLIED_CLOCK_GRACE = Duration.ofSeconds(1);

  private static final String SERVER_CLOCK = "";
  private static final StepResult LAGGING = StepResult.invalidClock("the supplied clock lags behind its own earlier readings "
      + "by more than expiryGrace: a state this limiter wrote may have expired on Redis while the clock still counts it");

  final RedisLink link; // package-private for tests: what it has sent and not had answered
  private final String graceMillis;
  /** The lag rule of a supplied clock; null with the server's. */
  private final ClockLag lag;

  private RedisRateLimiter(Builder b, RedisPlan plan, RedisLink link) {
    super(b, plan);
    this.link = link;
    long grace = (b.expiryGrace != null ? b.expiryGrace : (b.supplied() ? DEFAULT_SUPPLIED_CLOCK_GRACE : Duration.ZERO)).toMillis();
    if (b.supplied()) {
      // A script runs at most the timeout after its reading was checked (a reply later than that is no
      // answer): the key outlives its state by that too, so that the grace alone bounds the lag (ClockLag).
      this.lag = new ClockLag(grace * 1_000);
      grace += (timeoutNanos() + 999_999) / 1_000_000;
    } else {
      this.lag = null;
    }
    this.graceMillis = Long.toString(grace);
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
   * Settings of a {@link RedisRateLimiter}: those of every store-backed limiter ({@code timeout},
   * default {@link #DEFAULT_TIMEOUT}; {@code failureMode}; {@code ticker}, default the Redis server's
   * {@code TIME}; {@code listener}) and {@link #expiryGrace}. Fails fast on bad values.
   */
  public static final class Builder extends StoreBackedRateLimiter.Builder<Builder> {
    private final Supplier<StatefulConnection<String, String>> connector;
    private final AbstractRedisClient client;
    private final StatefulConnection<String, String> borrowed;
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

    @Override protected boolean batches() {
      return true;
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
      RedisPlan plan = RedisPlan.of(policy);
      RedisLink link = borrowed != null ? new RedisLink.Borrowed(borrowed) : new RedisLink.Owned(connector, client);
      return new RedisRateLimiter(this, plan, link);
    }
  }

  /**
   * Closes the connection this limiter opened, at any moment: a connection attempt still pending is
   * waited for (at most 2 s, never interrupted) and what it connected closed, so the client may be shut
   * down as soon as this returns. A connection it was given stays open. Decisions then fail per the failure mode.
   */
  @Override public void close() {
    link.close();
  }

  @Override public String toString() {
    return "RedisRateLimiter[policy=" + policy().name() + ", algorithm=" + policy().algorithm().id()
        + ", timeout=" + Duration.ofNanos(timeoutNanos()) + ", clock=" + (suppliedTicker() == null ? "server" : "supplied") + "]";
  }

  /** The Redis key holding {@code key}'s state under {@code policy}: its name and the key, nothing else. */
  static String storedKey(Policy policy, String key) {
    return "sluice:{" + StoredId.key(policy.name(), key) + "}";
  }

  // ---------------------------------------------------------------------------------------------
  // The step: one EVALSHA
  // ---------------------------------------------------------------------------------------------

  @Override protected RedisPlan compile(Policy policy) {
    return RedisPlan.of(policy);
  }

  @Override protected StepResult step(RedisPlan p, Step step, String key, long permits, Ticket ticket, long now, long deadline)
      throws Exception {
    if (lags(p, now, step != Step.PEEK)) {
      return LAGGING;
    }
    return result(eval(p, keys(p, key, ticket), argv(p, step, permits, ticket, now), deadline));
  }

  /** The stored key, and for a ticket's step its spent key beside it (one hash tag: one Cluster slot). */
  private static String[] keys(RedisPlan p, String key, Ticket ticket) {
    String stored = storedKey(p.policy, key);
    return ticket == null ? new String[] {stored} : new String[] {stored, spentKey(stored, ticket)};
  }

  /** Where a ticket applied to the budget stored at {@code stored} is recorded as spent. */
  static String spentKey(String stored, Ticket ticket) {
    return stored + ":t:" + ticket.id();
  }

  private String[] argv(RedisPlan p, Step step, long permits, Ticket ticket, long now) {
    return ticket == null
        ? p.argv(op(step), clockArg(now), permits, 0, graceMillis, 0)
        : p.argv(op(step), clockArg(now), permits, ticket.stamp(), graceMillis,
            ModelSteps.ticketExpiresAt(ticket));
  }

  /** The EVALSHA (and its EVAL on NOSCRIPT) without holding a thread; cancelling the result cancels the command. */
  @Override protected CompletableFuture<StepResult> stepAsync(RedisPlan p, Step step, String key, long permits, Ticket ticket,
                                                              long now, long deadline) {
    if (lags(p, now, step != Step.PEEK)) {
      return CompletableFuture.completedFuture(LAGGING);
    }
    return mapped(evalAsync(p, keys(p, key, ticket), argv(p, step, permits, ticket, now)), RedisRateLimiter::result);
  }

  /** A coalesced batch: one EVALSHA of op 'b', deciding every request in order. */
  @Override protected StepResult[] stepBatch(RedisPlan p, String scope, String key, long[] permits, long now, long deadline)
      throws Exception {
    if (lags(p, now, true)) {
      return lagging(permits.length);
    }
    return results(eval(p, keys(p, key, null), p.batchArgv(clockArg(now), permits, graceMillis), deadline), permits.length);
  }

  @Override protected CompletableFuture<StepResult[]> stepBatchAsync(RedisPlan p, String scope, String key, long[] permits,
                                                                     long now, long deadline) {
    if (lags(p, now, true)) {
      return CompletableFuture.completedFuture(lagging(permits.length));
    }
    return mapped(evalAsync(p, keys(p, key, null), p.batchArgv(clockArg(now), permits, graceMillis)), r -> results(r, permits.length));
  }

  /**
   * Whether a supplied reading lags as {@link ClockLag} refuses: a state this limiter wrote may have
   * expired on Redis's clock while this reading still counts it. Checked just before the call, on
   * {@link System#nanoTime()} (the rate Redis's clock runs at), whatever clock the deadlines use.
   */
  private boolean lags(RedisPlan p, long now, boolean writes) {
    return lag != null && !lag.admits(p.policy.algorithm(), now, System.nanoTime() / 1_000, writes);
  }

  private static StepResult[] lagging(int n) {
    StepResult[] rs = new StepResult[n];
    Arrays.fill(rs, LAGGING);
    return rs;
  }

  @Override protected boolean stepsAsync() {
    return true;
  }

  @Override protected boolean batches(RedisPlan p) {
    return p.batches();
  }

  private List<Object> eval(RedisPlan p, String[] keys, String[] argv, long deadline) throws Exception {
    RedisClusterAsyncCommands<String, String> c = commands();
    try {
      return await(link.sent(c, c.evalsha(p.script.sha, ScriptOutputType.MULTI, keys, argv)), deadline);
    } catch (ExecutionException e) {
      if (!(e.getCause() instanceof RedisNoScriptException)) {
        throw e;
      }
    }
    // The server lost its script cache (restart, SCRIPT FLUSH, a new cluster node): EVAL runs and caches it.
    return await(link.sent(c, c.eval(p.script.body, ScriptOutputType.MULTI, keys, argv)), deadline);
  }

  private CompletableFuture<List<Object>> evalAsync(RedisPlan p, String[] keys, String[] argv) {
    CompletableFuture<List<Object>> out = new CompletableFuture<>();
    RedisClusterAsyncCommands<String, String> c;
    try {
      c = commands();
    } catch (StoreNotReachedException e) {
      out.completeExceptionally(e);
      return out;
    }
    RedisFuture<List<Object>> first = link.sent(c, c.evalsha(p.script.sha, ScriptOutputType.MULTI, keys, argv));
    first.whenComplete((reply, e) -> {
      if (e != null && unwrap(e) instanceof RedisNoScriptException && !out.isDone()) {
        RedisFuture<List<Object>> retry = link.sent(c, c.eval(p.script.body, ScriptOutputType.MULTI, keys, argv));
        out.whenComplete((r, x) -> retry.cancel(false));
        retry.whenComplete((r2, e2) -> settle(out, r2, e2));
      } else {
        settle(out, reply, e);
      }
    });
    out.whenComplete((r, x) -> {
      if (out.isCancelled()) {
        first.cancel(false); // a command still queued in Lettuce is then never sent
      }
    });
    return out;
  }

  @Override protected void delete(RedisPlan p, String key, long deadline) throws Exception {
    await(commands().del(storedKey(p.policy, key)), deadline);
  }

  @Override protected Reason classify(Throwable e) {
    return e instanceof RedisCommandTimeoutException ? Reason.TIMEOUT : super.classify(e);
  }

  private RedisClusterAsyncCommands<String, String> commands() {
    RedisClusterAsyncCommands<String, String> c = link.commands();
    if (c == null) {
      throw new StoreNotReachedException("not connected to Redis");
    }
    return c;
  }

  private static String op(Step step) {
    return switch (step) {
      case ACQUIRE -> "a";
      case PEEK -> "p";
      case REFUND -> "r";
      case OVERRUN -> "o";
    };
  }

  /** The script's clock argument: '' for the server clock, else the supplied reading. */
  private static String clockArg(long now) {
    return now == STORE_CLOCK ? SERVER_CLOCK : Long.toString(now);
  }

  /** {@code reply} mapped by {@code f}; cancelling the result cancels the command too. */
  private static <T> CompletableFuture<T> mapped(CompletableFuture<List<Object>> reply, Function<List<Object>, T> f) {
    CompletableFuture<T> out = reply.thenApply(f);
    out.whenComplete((r, x) -> {
      if (out.isCancelled()) {
        reply.cancel(false);
      }
    });
    return out;
  }

  private static void settle(CompletableFuture<List<Object>> out, List<Object> reply, Throwable e) {
    if (e != null) {
      out.completeExceptionally(unwrap(e));
    } else {
      out.complete(reply);
    }
  }

  private static <T> T await(RedisFuture<T> f, long deadline) throws Exception {
    long left = deadline - System.nanoTime();
    try {
      if (left <= 0) {
        throw new TimeoutException("Redis call deadline passed");
      }
      return f.get(left, TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      f.cancel(false);  // a command still queued in Lettuce is then never sent
      throw e;
    }
  }

  /** The script's reply {status, allowed, remaining, resetAt, retryAfter, stamp, wrote} as a step result. */
  private static StepResult result(List<Object> r) {
    if (r == null || r.size() != 7) {
      throw new StoreException("unexpected script reply " + r);
    }
    return result(r, 0);
  }

  /** The seven fields from {@code at} of a reply whose length the caller checked (no view per request of a batch). */
  private static StepResult result(List<Object> r, int at) {
    long status = field(r, at);
    if (status == 1) {
      return StepResult.corrupt("the value is not a state Sluice wrote (wrong type or malformed)");
    }
    if (status == 2) {
      return StepResult.invalidClock("clock reading outside (0, 2^52] microseconds");
    }
    return StepResult.decided(field(r, at + 1) == 1, field(r, at + 2), field(r, at + 3), field(r, at + 4), field(r, at + 5),
        field(r, at + 6) == 1);
  }

  /** A batch's reply: seven fields per request, or one failure (corrupt state, bad clock) for all of them. */
  private static StepResult[] results(List<Object> r, int n) {
    StepResult[] rs = new StepResult[n];
    if (r != null && r.size() == 7 && n > 1) {
      Arrays.fill(rs, result(r)); // a failure; a real batch of n > 1 answers 7 * n fields
      if (rs[0].failure() == null) {
        throw new StoreException("unexpected script reply " + r + " to a batch of " + n);
      }
      return rs;
    }
    if (r == null || r.size() != 7 * n) {
      throw new StoreException("unexpected script reply " + r + " to a batch of " + n);
    }
    for (int i = 0; i < n; i++) {
      rs[i] = result(r, 7 * i);
    }
    return rs;
  }

  private static long field(List<Object> r, int i) {
    if (!(r.get(i) instanceof Long v)) {
      throw new StoreException("unexpected script reply " + r);
    }
    return v;
  }

  private static Throwable unwrap(Throwable e) {
    while ((e instanceof ExecutionException || e instanceof CompletionException) && e.getCause() != null) {
      e = e.getCause();
    }
    return e;
  }
}
