package dev.sluice.redis;

import dev.sluice.Algorithm;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Ticket;
import dev.sluice.internal.ClockLag;
import dev.sluice.internal.ModelSteps;
import dev.sluice.redis.internal.RedisPlan;
import dev.sluice.spi.Backend;
import dev.sluice.spi.Capabilities;
import dev.sluice.spi.StepResult;
import dev.sluice.spi.StoreException;
import dev.sluice.spi.StoreNotReachedException;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * Redis as a {@link Backend}: every step is one script run by its SHA ({@link RedisScript}, compiled
 * by {@link RedisPlan}), reloaded with its body on {@code NOSCRIPT}, waited for until the deadline,
 * and its reply read into a {@link StepResult}. This is the part every Redis client shares; the
 * client is behind the {@link RedisTransport}.
 */
final class RedisBackend implements Backend<RedisPlan> {
  /** Every algorithm; coalesced batches for all but the sliding log (a sorted-set entry per request); a client that holds no thread. */
  static final Capabilities CAPABILITIES = Capabilities.of("Redis", Algorithm.FixedWindow.class,
          Algorithm.SlidingWindow.class, Algorithm.TokenBucket.class, Algorithm.Gcra.class,
          Algorithm.SlidingLog.class)
      .withBatches(Algorithm.FixedWindow.class, Algorithm.SlidingWindow.class,
          Algorithm.TokenBucket.class, Algorithm.Gcra.class)
      .withAsyncSteps();

  private static final String SERVER_CLOCK = "";
  private static final StepResult LAGGING = StepResult.invalidClock("the supplied clock lags behind its own earlier readings "
      + "by more than expiryGrace: a state this limiter wrote may have expired on Redis while the clock still counts it");

  final RedisTransport transport;
  private final boolean ownsTransport;
  private final String graceMillis;
  /** The lag rule of a supplied clock; null with the server's. */
  private final ClockLag lag;
  private final String description;

  /**
   * {@code graceMillis}: the expiry grace; {@code supplied}: whether a ticker decides instead of the
   * server's clock, whose readings the lag rule then checks.
   */
  RedisBackend(RedisTransport transport, boolean ownsTransport, Duration expiryGrace, boolean supplied, long timeoutNanos,
               String description) {
    this.transport = transport;
    this.ownsTransport = ownsTransport;
    long grace = expiryGrace.toMillis();
    if (supplied) {
      // A script runs at most the timeout after its reading was checked (a reply later than that is no
      // answer): the key outlives its state by that too, so that the grace alone bounds the lag (ClockLag).
      this.lag = new ClockLag(grace * 1_000);
      grace += (timeoutNanos + 999_999) / 1_000_000;
    } else {
      this.lag = null;
    }
    this.graceMillis = Long.toString(grace);
    this.description = description;
  }

  @Override public Capabilities capabilities() {
    return CAPABILITIES;
  }

  @Override public RedisPlan compile(Policy policy) {
    return RedisPlan.of(policy);
  }

  @Override public StepResult step(RedisPlan p, Step step, String key, long permits, Ticket ticket, long now, long deadline)
      throws Exception {
    if (lags(p, now, step != Step.PEEK)) {
      return LAGGING;
    }
    return result(eval(p, keys(p, key, ticket), argv(p, step, permits, ticket, now), deadline));
  }

  /** The EVALSHA (and its EVAL on NOSCRIPT) without holding a thread; cancelling the result cancels the command. */
  @Override public CompletableFuture<StepResult> stepAsync(RedisPlan p, Step step, String key, long permits, Ticket ticket,
                                                           long now, long deadline) {
    if (lags(p, now, step != Step.PEEK)) {
      return CompletableFuture.completedFuture(LAGGING);
    }
    return mapped(evalAsync(p, keys(p, key, ticket), argv(p, step, permits, ticket, now)), RedisBackend::result);
  }

  /** A coalesced batch: one EVALSHA of op 'b', deciding every request in order. */
  @Override public StepResult[] stepBatch(RedisPlan p, String scope, String key, long[] permits, long now, long deadline)
      throws Exception {
    if (lags(p, now, true)) {
      return lagging(permits.length);
    }
    return results(eval(p, keys(p, key, null), p.batchArgv(clockArg(now), permits, graceMillis), deadline), permits.length);
  }

  @Override public CompletableFuture<StepResult[]> stepBatchAsync(RedisPlan p, String scope, String key, long[] permits,
                                                                  long now, long deadline) {
    if (lags(p, now, true)) {
      return CompletableFuture.completedFuture(lagging(permits.length));
    }
    return mapped(evalAsync(p, keys(p, key, null), p.batchArgv(clockArg(now), permits, graceMillis)), r -> results(r, permits.length));
  }

  @Override public void delete(RedisPlan p, String key, long deadline) throws Exception {
    await(transport.del(RedisPlan.storedKey(p.policy, key)), deadline);
  }

  @Override public Reason classify(Throwable e) {
    return transport.timedOut(e) ? Reason.TIMEOUT : Backend.super.classify(e);
  }

  @Override public void close() {
    if (ownsTransport) {
      transport.close();
    }
  }

  @Override public String describe() {
    return description;
  }

  /** The stored key, and for a ticket's step its spent key beside it (one hash tag: one Cluster slot). */
  private static String[] keys(RedisPlan p, String key, Ticket ticket) {
    String stored = RedisPlan.storedKey(p.policy, key);
    return ticket == null ? new String[] {stored} : new String[] {stored, RedisPlan.spentKey(stored, ticket)};
  }

  private String[] argv(RedisPlan p, Step step, long permits, Ticket ticket, long now) {
    return ticket == null
        ? p.argv(op(step), clockArg(now), permits, 0, graceMillis, 0)
        : p.argv(op(step), clockArg(now), permits, ticket.stamp(), graceMillis,
            ModelSteps.ticketExpiresAt(ticket));
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

  /** The script by its SHA, waited for until {@code deadline}; on NOSCRIPT its body once, which caches it again. */
  private List<Object> eval(RedisPlan p, String[] keys, String[] argv, long deadline) throws Exception {
    try {
      return await(transport.evalsha(p.script.sha, keys, argv), deadline);
    } catch (ExecutionException e) {
      if (!transport.noScript(e.getCause())) {
        throw e;
      }
    }
    // The server lost its script cache (restart, SCRIPT FLUSH, a new cluster node): EVAL runs and caches it.
    return await(transport.eval(p.script.body, keys, argv), deadline);
  }

  private CompletableFuture<List<Object>> evalAsync(RedisPlan p, String[] keys, String[] argv) {
    CompletableFuture<List<Object>> out = new CompletableFuture<>();
    CompletableFuture<List<Object>> first;
    try {
      first = transport.evalsha(p.script.sha, keys, argv);
    } catch (StoreNotReachedException e) {
      out.completeExceptionally(e);
      return out;
    }
    first.whenComplete((reply, e) -> {
      if (e != null && transport.noScript(unwrap(e)) && !out.isDone()) {
        CompletableFuture<List<Object>> retry;
        try {
          retry = transport.eval(p.script.body, keys, argv);
        } catch (RuntimeException x) {
          out.completeExceptionally(x);
          return;
        }
        out.whenComplete((r, x) -> retry.cancel(false));
        retry.whenComplete((r2, e2) -> settle(out, r2, e2));
      } else {
        settle(out, reply, e);
      }
    });
    out.whenComplete((r, x) -> {
      if (out.isCancelled()) {
        first.cancel(false); // a command still queued in the client is then never sent
      }
    });
    return out;
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

  private static <T> T await(CompletableFuture<T> f, long deadline) throws Exception {
    long left = deadline - System.nanoTime();
    try {
      if (left <= 0) {
        throw new TimeoutException("Redis call deadline passed");
      }
      return f.get(left, TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      f.cancel(false);  // a command still queued in the client is then never sent
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
