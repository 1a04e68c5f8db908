package dev.sluice.redis;

import dev.sluice.Algorithm;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Ticket;
import dev.sluice.internal.ClockLag;
import dev.sluice.internal.ModelSteps;
import dev.sluice.redis.internal.RedisPlan;
import dev.sluice.redis.internal.RedisScript;
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
    String[] keys = keys(p, key, ticket);
    List<Object> reply = eval(p, keys, argv(p, step, permits, ticket, now), deadline);
    String other = redirect(reply);
    if (other != null) { // the key's override is of another algorithm: its script decides
      RedisPlan q = RedisPlan.of(RedisPlan.overridden(p.policy, other));
      reply = eval(q, keys, argv(q, step, permits, ticket, now), deadline);
    }
    return result(reply, p.policy);
  }

  /** The EVALSHA (and its EVAL on NOSCRIPT) without holding a thread; cancelling the result cancels the command. */
  @Override public CompletableFuture<StepResult> stepAsync(RedisPlan p, Step step, String key, long permits, Ticket ticket,
                                                           long now, long deadline) {
    if (lags(p, now, step != Step.PEEK)) {
      return CompletableFuture.completedFuture(LAGGING);
    }
    String[] keys = keys(p, key, ticket);
    CompletableFuture<List<Object>> reply = evalAsync(p, keys, argv(p, step, permits, ticket, now));
    CompletableFuture<List<Object>> decided = reply.thenCompose(r -> {
      String other = redirect(r);
      if (other == null) {
        return CompletableFuture.completedFuture(r);
      }
      RedisPlan q = RedisPlan.of(RedisPlan.overridden(p.policy, other)); // the key's override's script decides
      return evalAsync(q, keys, argv(q, step, permits, ticket, now));
    });
    return cancelling(decided.thenApply(r -> result(r, p.policy)), reply);
  }

  /** A coalesced batch: one EVALSHA of op 'b', deciding every request in order. */
  @Override public StepResult[] stepBatch(RedisPlan p, String scope, String key, long[] permits, long now, long deadline)
      throws Exception {
    if (lags(p, now, true)) {
      return lagging(permits.length);
    }
    String[] keys = keys(p, key, null);
    List<Object> reply = eval(p, keys, p.batchArgv(clockArg(now), permits, graceMillis), deadline);
    String other = redirect(reply);
    if (other != null) { // the key's override is of another algorithm: its script decides, as a batch if it can
      RedisPlan q = RedisPlan.of(RedisPlan.overridden(p.policy, other));
      if (!q.batches()) {
        StepResult[] rs = new StepResult[permits.length];
        for (int i = 0; i < permits.length; i++) {
          rs[i] = step(p, Step.ACQUIRE, key, permits[i], null, now, deadline);
        }
        return rs;
      }
      reply = eval(q, keys, q.batchArgv(clockArg(now), permits, graceMillis), deadline);
    }
    return results(reply, permits.length, p.policy);
  }

  @Override public CompletableFuture<StepResult[]> stepBatchAsync(RedisPlan p, String scope, String key, long[] permits,
                                                                  long now, long deadline) {
    if (lags(p, now, true)) {
      return CompletableFuture.completedFuture(lagging(permits.length));
    }
    String[] keys = keys(p, key, null);
    CompletableFuture<List<Object>> reply = evalAsync(p, keys, p.batchArgv(clockArg(now), permits, graceMillis));
    CompletableFuture<StepResult[]> decided = reply.thenCompose(r -> {
      String other = redirect(r);
      if (other == null) {
        return CompletableFuture.completedFuture(results(r, permits.length, p.policy));
      }
      RedisPlan q = RedisPlan.of(RedisPlan.overridden(p.policy, other));
      if (q.batches()) {
        return evalAsync(q, keys, q.batchArgv(clockArg(now), permits, graceMillis)).thenApply(r2 -> results(r2, permits.length, p.policy));
      }
      // The override's algorithm decides no batch (the sliding log): one request after the other, in order.
      StepResult[] rs = new StepResult[permits.length];
      CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);
      for (int i = 0; i < permits.length; i++) {
        int at = i;
        chain = chain.thenCompose(x -> stepAsync(p, Step.ACQUIRE, key, permits[at], null, now, deadline)).thenAccept(one -> rs[at] = one);
      }
      return chain.thenApply(x -> rs);
    });
    return cancelling(decided, reply);
  }

  @Override public void delete(RedisPlan p, String key, long deadline) throws Exception {
    await(transport.del(RedisPlan.storedKey(p.policy, key)), deadline); // the override stays: configuration
  }

  /**
   * Sets ({@code override} non-null) or clears {@code key}'s override under {@code asked.name()} with
   * one run of the override script; returns whether there was one.
   */
  boolean override(Policy asked, String key, Policy override, long deadline) throws Exception {
    String[] keys = {RedisPlan.overrideKey(RedisPlan.storedKey(asked, key))};
    String[] argv = override == null ? new String[] {"c"} : new String[] {"s", RedisPlan.of(override).overrideValue()};
    List<Object> reply = run(RedisScript.OVERRIDE, keys, argv, deadline);
    return reply != null && reply.size() == 1 && Long.valueOf(1).equals(reply.get(0));
  }

  /** {@code key}'s override under {@code asked.name()}, or null. */
  Policy override(Policy asked, String key, long deadline) throws Exception {
    List<Object> reply = run(RedisScript.OVERRIDE, new String[] {RedisPlan.overrideKey(RedisPlan.storedKey(asked, key))},
        new String[] {"g"}, deadline);
    if (reply == null || reply.isEmpty()) {
      return null;
    }
    try {
      return RedisPlan.overridden(asked, text(reply.get(0)));
    } catch (IllegalArgumentException notOurs) {
      throw new StoreException("the override of this key is not one Sluice wrote: " + reply.get(0), notOurs);
    }
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
    return run(p.script, keys, argv, deadline);
  }

  private List<Object> run(RedisScript script, String[] keys, String[] argv, long deadline) throws Exception {
    try {
      return await(transport.evalsha(script.sha, keys, argv), deadline);
    } catch (ExecutionException e) {
      if (!transport.noScript(e.getCause())) {
        throw e;
      }
    }
    // The server lost its script cache (restart, SCRIPT FLUSH, a new cluster node): EVAL runs and caches it.
    return await(transport.eval(script.body, keys, argv), deadline);
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

  /** {@code out}, whose cancelling cancels the command {@code reply} too. */
  private static <T> CompletableFuture<T> cancelling(CompletableFuture<T> out, CompletableFuture<List<Object>> reply) {
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

  /**
   * The override a reply names when the key's override is of another algorithm (status 3: nothing
   * was written, and that algorithm's script decides), else null.
   */
  private static String redirect(List<Object> r) {
    return r != null && r.size() == 8 && Long.valueOf(3).equals(r.get(0)) ? text(r.get(7)) : null;
  }

  /**
   * The script's reply {status, allowed, remaining, resetAt, retryAfter, stamp, wrote} as a step
   * result; when it ends with the key's override, marked as decided under it.
   */
  private static StepResult result(List<Object> r, Policy asked) {
    if (r == null || (r.size() != 7 && r.size() != 8)) {
      throw new StoreException("unexpected script reply " + r);
    }
    StepResult one = result(r, 0);
    return r.size() == 8 ? decided(one, r, asked) : one;
  }

  /** {@code r} marked as decided under the override that {@code reply} ends with, unless it failed or is {@code asked}. */
  private static StepResult decided(StepResult r, List<Object> reply, Policy asked) {
    if (r.failure() != null) {
      return r;
    }
    if (redirect(reply) != null) {
      return StepResult.contention("the key's override changed algorithm during the decision");
    }
    Policy by;
    try {
      by = RedisPlan.overridden(asked, text(reply.get(reply.size() - 1)));
    } catch (IllegalArgumentException notOurs) {
      return StepResult.corrupt("the key's override is not one Sluice wrote");
    }
    return by == asked ? r : r.decidedBy(by);
  }

  /** A bulk string as the client gives it (text, or bytes). */
  private static String text(Object v) {
    if (v instanceof byte[] b) {
      return new String(b, java.nio.charset.StandardCharsets.UTF_8);
    }
    if (v instanceof java.nio.ByteBuffer bb) {
      return java.nio.charset.StandardCharsets.UTF_8.decode(bb.duplicate()).toString();
    }
    return String.valueOf(v);
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

  /**
   * A batch's reply: seven fields per request, then the key's override when it decided them; or one
   * failure (corrupt state, bad clock, an override that changed algorithm meanwhile) for all of them.
   */
  private static StepResult[] results(List<Object> r, int n, Policy asked) {
    StepResult[] rs = new StepResult[n];
    if (r != null && (r.size() == 7 || r.size() == 8) && n > 1) {
      StepResult one = result(r, 0); // a failure: a real batch of n > 1 answers at least 7 * n fields
      if (redirect(r) != null) {
        one = StepResult.contention("the key's override changed algorithm during the decision");
      } else if (one.failure() == null) {
        throw new StoreException("unexpected script reply " + r + " to a batch of " + n);
      }
      Arrays.fill(rs, one);
      return rs;
    }
    if (r == null || (r.size() != 7 * n && r.size() != 7 * n + 1)) {
      throw new StoreException("unexpected script reply " + r + " to a batch of " + n);
    }
    for (int i = 0; i < n; i++) {
      rs[i] = result(r, 7 * i);
      if (r.size() == 7 * n + 1) {
        rs[i] = decided(rs[i], r, asked);
      }
    }
    return rs;
  }

  private static long field(List<Object> r, int i) {
    if (i >= r.size()) {
      throw new StoreException("unexpected script reply " + r);
    }
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
