package dev.sluice.redis;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.internal.Checks;
import dev.sluice.internal.StoredId;
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
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BiConsumer;
import java.util.function.Supplier;

/**
 * A {@link RateLimiter} whose state lives in Redis: every decision, refund and peek is exactly one
 * EVALSHA of the algorithm's Lua script, which reads the state, computes the reference step function
 * ({@link dev.sluice.model.ReferenceModel}) and writes the new state with its TTL, atomically.
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
 *       of application instances cannot disagree. {@link Builder#ticker(Ticker)} supplies a clock instead.
 *   <li><b>Expiry.</b> Every write sets a TTL ending when the state can no longer matter
 *       ({@link dev.sluice.model.ReferenceModel#expiresAt}); run Redis with {@code maxmemory-policy noeviction}.
 *   <li><b>Failure.</b> Every call has a deadline ({@link #DEFAULT_TIMEOUT} unless set). A refused or lost
 *       connection, a timeout, a frozen server, a script error or a corrupt stored value becomes a
 *       {@link Decision} under the {@link FailureMode}; nothing is thrown for store trouble.
 *   <li><b>Algorithms.</b> All five: fixed window, sliding window, token bucket and GCRA keep one short
 *       string per key; the exact sliding log keeps a sorted set with one entry per admitted request in
 *       the window, and reads them all on each call, so it suits small limits.
 * </ul>
 * Thread-safe. Closing the limiter closes the connection it opened itself, never one it was given.
 */
public final class RedisRateLimiter implements RateLimiter, AutoCloseable {
  /** Deadline of every Redis call unless {@link Builder#timeout(Duration)} says otherwise: 100 ms. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofMillis(100);

  /**
   * Extra TTL when the limiter runs on a supplied {@link Ticker} (default 1 s): keys outlive their state
   * by this much so that application clocks that disagree by up to this much cannot expire a state
   * another instance still counts. With the server clock there is one clock and no grace.
   */
  public static final Duration DEFAULT_SUPPLIED_CLOCK_GRACE = Duration.ofSeconds(1);

  private static final System.Logger LOG = System.getLogger(RedisRateLimiter.class.getName());
  private static final String ACQUIRE = "a";
  private static final String PEEK = "p";
  private static final String REFUND = "r";
  private static final String SERVER_CLOCK = "";
  private static final ScheduledThreadPoolExecutor DEADLINES = deadlineTimer();
  private static final int MAX_CACHED_OVERRIDES = 256;

  private final Policy policy;
  private final RedisPlan plan;
  private final RedisLink link;
  private final long timeoutNanos;
  private final FailureMode failureMode;
  private final Ticker ticker;
  private final String graceMillis;
  private final RateLimitListener listener;
  /** Tickets the fallback limiter issued, so that their refunds go back to it (fallback mode only). */
  private final Set<Ticket> fallbackTickets;
  /** Compiled per-call override policies (bounded: past the cap an override is compiled per call). */
  private final ConcurrentHashMap<Policy, RedisPlan> overrides = new ConcurrentHashMap<>();

  private RedisRateLimiter(Builder b, RedisPlan plan, RedisLink link) {
    this.policy = b.policy;
    this.plan = plan;
    this.link = link;
    this.timeoutNanos = b.timeout.toNanos();
    this.failureMode = b.failureMode;
    this.ticker = b.ticker;
    Duration grace = b.expiryGrace != null ? b.expiryGrace : (b.ticker != null ? DEFAULT_SUPPLIED_CLOCK_GRACE : Duration.ZERO);
    this.graceMillis = Long.toString(grace.toMillis());
    this.listener = RateLimitListener.guarded(b.listener, b.includeKeys);
    this.fallbackTickets = failureMode instanceof FailureMode.Fallback
        ? Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>())) : null;
  }

  // ---------------------------------------------------------------------------------------------
  // Builders
  // ---------------------------------------------------------------------------------------------

  /** A limiter on a connection it opens from {@code client} (its default URI) and reopens after an outage. */
  public static Builder builder(Policy policy, RedisClient client) {
    Checks.notNull("client", client);
    return new Builder(policy, () -> client.connect(StringCodec.UTF8), null);
  }

  /** A limiter on a connection it opens from {@code client} to {@code uri} (standalone or Sentinel URI). */
  public static Builder builder(Policy policy, RedisClient client, RedisURI uri) {
    Checks.notNull("client", client);
    Checks.notNull("uri", uri);
    return new Builder(policy, () -> client.connect(StringCodec.UTF8, uri), null);
  }

  /** A limiter on a Redis Cluster connection it opens from {@code client}. */
  public static Builder builder(Policy policy, RedisClusterClient client) {
    Checks.notNull("client", client);
    return new Builder(policy, () -> client.connect(StringCodec.UTF8), null);
  }

  /** A limiter on the caller's connection, which it uses as is and never closes. */
  public static Builder builder(Policy policy, StatefulRedisConnection<String, String> connection) {
    return new Builder(policy, null, Checks.notNull("connection", connection));
  }

  /** A limiter on the caller's cluster connection, which it uses as is and never closes. */
  public static Builder builder(Policy policy, StatefulRedisClusterConnection<String, String> connection) {
    return new Builder(policy, null, Checks.notNull("connection", connection));
  }

  /** Settings of a {@link RedisRateLimiter}; fails fast on bad values. */
  public static final class Builder {
    private final Policy policy;
    private final Supplier<StatefulConnection<String, String>> connector;
    private final StatefulConnection<String, String> borrowed;
    private Duration timeout = DEFAULT_TIMEOUT;
    private FailureMode failureMode = FailureMode.closed();
    private Ticker ticker;
    private Duration expiryGrace;
    private RateLimitListener listener = RateLimitListener.NONE;
    private boolean includeKeys;

    private Builder(Policy policy, Supplier<StatefulConnection<String, String>> connector,
                    StatefulConnection<String, String> borrowed) {
      this.policy = Checks.notNull("policy", policy);
      this.connector = connector;
      this.borrowed = borrowed;
    }

    /** Deadline of every Redis call (default {@link #DEFAULT_TIMEOUT}, 100 ms); at least 1 ms. */
    public Builder timeout(Duration timeout) {
      this.timeout = Checks.atLeastOneMilli("timeout", timeout, "give every Redis call at least Duration.ofMillis(1)");
      return this;
    }

    /** What a decision does when Redis cannot answer (default {@link FailureMode#closed()}). */
    public Builder failureMode(FailureMode failureMode) {
      this.failureMode = Checks.notNull("failureMode", failureMode);
      return this;
    }

    /**
     * Decide on this clock (epoch microseconds) instead of the Redis server's {@code TIME}. Readings
     * must lie in (0, 2^52] (until the year 2112); others are refused with {@link Reason#INVALID_CLOCK}.
     */
    public Builder ticker(Ticker ticker) {
      this.ticker = Checks.notNull("ticker", ticker);
      return this;
    }

    /**
     * How much longer than its state can matter a key lives in Redis (default 0 with the server clock,
     * {@link #DEFAULT_SUPPLIED_CLOCK_GRACE} with a supplied ticker). Only memory is traded: a state
     * past its expiry decides exactly like an absent one.
     */
    public Builder expiryGrace(Duration grace) {
      Checks.notNull("expiryGrace", grace);
      if (grace.isNegative()) {
        throw new IllegalArgumentException("expiryGrace " + grace + " is negative; use Duration.ZERO or more");
      }
      this.expiryGrace = grace;
      return this;
    }

    /** Told about decisions, refusals, refunds and each Redis call; receives keys only when {@code includeKeys}. */
    public Builder listener(RateLimitListener listener, boolean includeKeys) {
      this.listener = Checks.notNull("listener", listener);
      this.includeKeys = includeKeys;
      return this;
    }

    /**
     * Builds the limiter. Throws IllegalArgumentException when the policy cannot run on Redis (a value
     * outside the scripts' exact range). An unreachable server does not fail the
     * build, which waits at most 2 s for a first connection it opens itself: decisions follow the
     * failure mode until the server answers.
     */
    public RedisRateLimiter build() {
      RedisPlan plan = RedisPlan.of(policy);
      RedisLink link = borrowed != null ? new RedisLink.Borrowed(borrowed) : new RedisLink.Owned(connector);
      return new RedisRateLimiter(this, plan, link);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // RateLimiter
  // ---------------------------------------------------------------------------------------------

  @Override public Policy policy() {
    return policy;
  }

  @Override public Decision tryAcquire(String key, long permits, Policy policy) {
    Checks.key(key);
    RedisPlan p = plan(policy);
    Checks.permits(permits, policy.limit(), policy.name());
    return decide(p, key, permits, ACQUIRE);
  }

  @Override public CompletionStage<Decision> tryAcquireAsync(String key, long permits, Policy policy) {
    Checks.key(key);
    RedisPlan p = plan(policy);
    Checks.permits(permits, policy.limit(), policy.name());
    String now = clockArg();
    if (now == null) {
      return CompletableFuture.completedFuture(finish(failed(p.policy, key, permits, false, Reason.INVALID_CLOCK, null), key));
    }
    RedisClusterAsyncCommands<String, String> c = link.commands();
    if (c == null) {
      return CompletableFuture.completedFuture(finish(notConnected(p.policy, key, permits, false), key));
    }
    AsyncCall call = new AsyncCall(p, key, permits, c, new String[] {storedKey(p.policy, key)},
        p.argv(ACQUIRE, now, permits, 0, graceMillis));
    call.start();
    return call;
  }

  @Override public Decision peek(String key, Policy policy) {
    Checks.key(key);
    return decide(plan(policy), key, 1, PEEK);
  }

  @Override public Refund refund(Ticket ticket) {
    if (ticket == null) {
      return Refund.NO_EFFECT;
    }
    if (fallbackTickets != null && fallbackTickets.remove(ticket)) {
      return refundLocally(ticket);
    }
    Policy p = ticket.policy();
    RedisPlan rp;
    try {
      rp = plan(p);
    } catch (IllegalArgumentException e) {
      return Refund.NO_EFFECT;  // not a ticket this limiter could have issued
    }
    long permits = Math.min(ticket.permits(), p.limit());  // more than the limit gives back the same: all of it
    if (permits < 1 || !ticket.spend()) {
      return report(p, Refund.NO_EFFECT);
    }
    String now = clockArg();
    RedisClusterAsyncCommands<String, String> c = now == null ? null : link.commands();
    if (c == null) {
      ticket.unspend();  // nothing was sent: the ticket stays usable
      return report(p, Refund.FAILED);
    }
    long start = System.nanoTime();
    Throwable error = null;
    Refund result;
    try {
      List<Object> r = evalSync(c, rp.script, new String[] {storedKey(p, ticket.key())},
          rp.argv(REFUND, now, permits, ticket.stamp(), graceMillis), start + timeoutNanos);
      long status = field(r, 0);
      if (status != 0) {
        ticket.unspend();  // corrupt state or clock: the script wrote nothing
        result = Refund.FAILED;
      } else {
        result = field(r, 6) == 1 ? Refund.APPLIED : Refund.NO_EFFECT;
      }
    } catch (Exception e) {
      // The refund may or may not have run: keep the ticket spent, so a retry can never give twice.
      error = caught(e);
      result = Refund.FAILED;
    }
    listener.onStoreCall(p, System.nanoTime() - start, error);
    if (error != null) {
      LOG.log(System.Logger.Level.WARNING, "refund for policy '" + p.name() + "' failed; the limiter stays stricter: " + error);
    }
    return report(p, result);
  }

  /**
   * Deletes {@code key}'s state under {@code policy} (one DEL) and, in fallback mode, the fallback
   * limiter's count too. A failure is logged and reported to the listener, never thrown.
   */
  @Override public void reset(String key, Policy policy) {
    Checks.key(key);
    RedisPlan p = plan(policy);
    RedisClusterAsyncCommands<String, String> c = link.commands();
    long start = System.nanoTime();
    Throwable error = null;
    if (c == null) {
      error = new RedisStoreException("not connected to Redis");
    } else {
      try {
        await(c.del(storedKey(p.policy, key)), start + timeoutNanos);
      } catch (Exception e) {
        error = caught(e);
      }
    }
    listener.onStoreCall(p.policy, System.nanoTime() - start, error);
    if (error != null) {
      LOG.log(System.Logger.Level.WARNING, "reset for policy '" + p.policy.name() + "' failed: " + error);
    }
    if (failureMode instanceof FailureMode.Fallback fb) {
      try {
        fb.local().reset(key, p.policy);  // the fallback's count for this key is forgotten too
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "fallback limiter reset failed", e);
      }
    }
  }

  /** Closes the connection this limiter opened; a connection it was given stays open. Decisions then fail per the failure mode. */
  @Override public void close() {
    link.close();
  }

  @Override public String toString() {
    return "RedisRateLimiter[policy=" + policy.name() + ", algorithm=" + policy.algorithm().id()
        + ", timeout=" + Duration.ofNanos(timeoutNanos) + ", clock=" + (ticker == null ? "server" : "supplied") + "]";
  }

  /** The Redis key holding {@code key}'s state under {@code policy}. */
  static String storedKey(Policy policy, String key) {
    return "sluice:{" + StoredId.key(policy.name(), key) + "}";
  }

  // ---------------------------------------------------------------------------------------------
  // One decision
  // ---------------------------------------------------------------------------------------------

  private RedisPlan plan(Policy p) {
    Checks.notNull("policy", p);
    if (p == policy || p.equals(policy)) {
      return plan;
    }
    RedisPlan cached = overrides.get(p);
    if (cached == null) {
      cached = RedisPlan.of(p);
      if (overrides.size() < MAX_CACHED_OVERRIDES) {
        overrides.putIfAbsent(p, cached);
      }
    }
    return cached;
  }

  /** The script's clock argument: '' for the server clock, the supplied reading, or null when that reading is invalid. */
  private String clockArg() {
    if (ticker == null) {
      return SERVER_CLOCK;
    }
    long now = ticker.nowMicros();
    return now <= 0 || now > Checks.MAX_EXACT ? null : Long.toString(now);
  }

  private Decision decide(RedisPlan p, String key, long permits, String op) {
    boolean peek = PEEK.equals(op);
    String now = clockArg();
    if (now == null) {
      return finish(failed(p.policy, key, permits, peek, Reason.INVALID_CLOCK, null), key);
    }
    RedisClusterAsyncCommands<String, String> c = link.commands();
    if (c == null) {
      return finish(notConnected(p.policy, key, permits, peek), key);
    }
    long start = System.nanoTime();
    Decision d;
    Throwable error = null;
    try {
      List<Object> r = evalSync(c, p.script, new String[] {storedKey(p.policy, key)},
          p.argv(op, now, permits, 0, graceMillis), start + timeoutNanos);
      d = toDecision(r, p.policy, key, permits, peek);
    } catch (Exception e) {
      error = caught(e);
      d = failed(p.policy, key, permits, peek, reasonOf(error), error);
    }
    listener.onStoreCall(p.policy, System.nanoTime() - start, error);
    return finish(d, key);
  }

  private static List<Object> evalSync(RedisClusterAsyncCommands<String, String> c, RedisScript script,
                                       String[] keys, String[] argv, long deadline) throws Exception {
    try {
      return await(c.evalsha(script.sha, ScriptOutputType.MULTI, keys, argv), deadline);
    } catch (ExecutionException e) {
      if (!(e.getCause() instanceof RedisNoScriptException)) {
        throw e;
      }
    }
    // The server lost its script cache (restart, SCRIPT FLUSH, a new cluster node): EVAL runs and caches it.
    return await(c.eval(script.body, ScriptOutputType.MULTI, keys, argv), deadline);
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

  /** Maps the script's reply to a decision (or to the failure mode for corrupt state and invalid clock). */
  private Decision toDecision(List<Object> r, Policy p, String key, long permits, boolean peek) {
    long status = field(r, 0);
    if (status == 1) {
      return failed(p, key, permits, peek, Reason.CORRUPT_STATE,
          new RedisStoreException("the value at " + storedKey(p, key) + " is not a state Sluice wrote (wrong type or malformed)"));
    }
    if (status == 2) {
      return failed(p, key, permits, peek, Reason.INVALID_CLOCK, new RedisStoreException("clock reading outside (0, 2^52] microseconds"));
    }
    long remaining = field(r, 2);
    long resetAt = field(r, 3);
    if (field(r, 1) == 1) {
      return Decision.allowed(p, remaining, resetAt, peek ? null : new Ticket(p, key, permits, field(r, 5)));
    }
    return Decision.refused(p, Reason.LIMIT_EXCEEDED, remaining, resetAt, field(r, 4));
  }

  private static long field(List<Object> r, int i) {
    if (r == null || r.size() != 7 || !(r.get(i) instanceof Long v)) {
      throw new RedisStoreException("unexpected script reply " + r);
    }
    return v;
  }

  private Decision notConnected(Policy p, String key, long permits, boolean peek) {
    RedisStoreException e = new RedisStoreException("not connected to Redis");
    listener.onStoreCall(p, 0, e);
    return failed(p, key, permits, peek, Reason.STORE_UNAVAILABLE, e);
  }

  private Decision failed(Policy p, String key, long permits, boolean peek, Reason reason, Throwable cause) {
    long now = ticker != null ? ticker.nowMicros() : Ticker.system().nowMicros();
    try {
      if (failureMode instanceof FailureMode.Fallback fb && !FailureMode.alwaysClosed(reason)) {
        if (peek) {
          return fb.local().peek(key, p).withPath(Path.FALLBACK);
        }
        Decision d = fb.decide(p, key, permits, reason, cause, now);
        if (d.path() == Path.FALLBACK) {
          d.ticket().ifPresent(fallbackTickets::add);
        }
        return d;
      }
      return failureMode.decide(p, key, permits, reason, cause, now);
    } catch (RuntimeException e) {
      // The fallback limiter rejected what Redis accepts (e.g. a key over its length cap): never throw for an outage.
      LOG.log(System.Logger.Level.WARNING, "fallback limiter failed; failing closed", e);
      return FailureMode.closed().decide(p, key, permits, reason, cause, now);
    }
  }

  private Refund refundLocally(Ticket ticket) {
    Refund r;
    try {
      r = ((FailureMode.Fallback) failureMode).local().refund(ticket);
    } catch (RuntimeException e) {
      r = Refund.FAILED;
    }
    return report(ticket.policy(), r);
  }

  private Refund report(Policy p, Refund r) {
    listener.onRefund(p, r);
    return r;
  }

  private Decision finish(Decision d, String key) {
    listener.onDecision(d, key);
    return d;
  }

  private static Reason reasonOf(Throwable e) {
    return e instanceof TimeoutException || e instanceof RedisCommandTimeoutException ? Reason.TIMEOUT : Reason.STORE_UNAVAILABLE;
  }

  /** The cause of a failed sync call; an interrupted caller gets its interrupt flag back. */
  private static Throwable caught(Exception e) {
    if (e instanceof InterruptedException) {
      Thread.currentThread().interrupt();
    }
    return unwrap(e);
  }

  private static Throwable unwrap(Throwable e) {
    while ((e instanceof ExecutionException || e instanceof CompletionException) && e.getCause() != null) {
      e = e.getCause();
    }
    return e;
  }

  private static ScheduledThreadPoolExecutor deadlineTimer() {
    ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1, r -> {
      Thread th = new Thread(r, "sluice-redis-deadline");
      th.setDaemon(true);
      return th;
    });
    t.setRemoveOnCancelPolicy(true);
    return t;
  }

  /**
   * One asynchronous decision: the EVALSHA (and its EVAL retry on NOSCRIPT) racing a deadline timer.
   * Whichever settles first decides; no thread waits. The losing side only cancels.
   */
  private final class AsyncCall extends CompletableFuture<Decision> implements Runnable, BiConsumer<List<Object>, Throwable> {
    private final RedisPlan plan;
    private final String key;
    private final long permits;
    private final RedisClusterAsyncCommands<String, String> commands;
    private final String[] keys;
    private final String[] argv;
    private final AtomicBoolean settled = new AtomicBoolean();
    private final long start = System.nanoTime();
    private volatile ScheduledFuture<?> timer;
    private volatile RedisFuture<List<Object>> inflight;
    private volatile boolean retried;

    AsyncCall(RedisPlan plan, String key, long permits, RedisClusterAsyncCommands<String, String> commands,
              String[] keys, String[] argv) {
      this.plan = plan;
      this.key = key;
      this.permits = permits;
      this.commands = commands;
      this.keys = keys;
      this.argv = argv;
    }

    void start() {
      timer = DEADLINES.schedule(this, timeoutNanos, TimeUnit.NANOSECONDS);
      send(false);
    }

    private void send(boolean body) {
      RedisFuture<List<Object>> f;
      try {
        f = body ? commands.eval(plan.script.body, ScriptOutputType.MULTI, keys, argv)
            : commands.evalsha(plan.script.sha, ScriptOutputType.MULTI, keys, argv);
      } catch (RuntimeException e) {
        accept(null, e);  // a connection closing under us: a failure decision, never a throw
        return;
      }
      inflight = f;
      f.whenComplete(this);
    }

    @Override public void accept(List<Object> reply, Throwable e) {
      Throwable error = e == null ? null : unwrap(e);
      if (error instanceof RedisNoScriptException && !retried && !settled.get()) {
        retried = true;
        send(true);
        return;
      }
      if (!settled.compareAndSet(false, true)) {
        return;
      }
      ScheduledFuture<?> t = timer;
      if (t != null) {
        t.cancel(false);
      }
      Decision d;
      try {
        d = error == null ? toDecision(reply, plan.policy, key, permits, false)
            : failed(plan.policy, key, permits, false, reasonOf(error), error);
      } catch (RuntimeException ex) {
        error = ex;
        d = failed(plan.policy, key, permits, false, Reason.STORE_UNAVAILABLE, ex);
      }
      listener.onStoreCall(plan.policy, System.nanoTime() - start, error);
      complete(finish(d, key));
    }

    /** The deadline passed first. */
    @Override public void run() {
      if (!settled.compareAndSet(false, true)) {
        return;
      }
      RedisFuture<List<Object>> f = inflight;
      if (f != null) {
        f.cancel(false);
      }
      TimeoutException te = new TimeoutException("Redis call deadline of " + Duration.ofNanos(timeoutNanos) + " passed");
      listener.onStoreCall(plan.policy, System.nanoTime() - start, te);
      complete(finish(failed(plan.policy, key, permits, false, Reason.TIMEOUT, te), key));
    }
  }
}
