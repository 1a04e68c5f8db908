package dev.sluice.redis.redisson;

import dev.sluice.redis.RedisTransport;
import dev.sluice.spi.StoreNotReachedException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.redisson.api.RScript;
import org.redisson.api.RedissonClient;
import org.redisson.api.options.OptionalOptions;
import org.redisson.client.RedisConnectionException;
import org.redisson.client.RedisNoScriptException;
import org.redisson.client.RedisTimeoutException;
import org.redisson.client.codec.StringCodec;

/**
 * The {@link RedisTransport} over Redisson: a {@link RedissonClient}'s async scripts (standalone,
 * Sentinel, Cluster, whatever the client's configuration says), built with
 * {@link dev.sluice.redis.RedisRateLimiter#builder(dev.sluice.Policy, RedisTransport)}:
 *
 * <pre>{@code
 * RedisRateLimiter limiter = RedisRateLimiter.builder(policy, RedissonTransport.of(redisson))
 *     .timeout(Duration.ofMillis(100)).build();
 * }</pre>
 *
 * <p>No thread waits: each call is Redisson's {@code EVALSHA} future, cancelled by the limiter at its
 * deadline (a command Redisson has not written yet is then never written). Redisson sends concurrent
 * commands on different pooled connections, so two calls on one key could reach Redis in either
 * order: the transport sends a key's call only once the call before it on that key (or on a key
 * sharing its lane, one of {@value #LANES}) has its answer or was given up, so an async burst on one
 * key is decided in issue order. A hot key's acquires are coalesced by the limiter anyway. Sluice's calls run with
 * {@code retryAttempts} 0, whatever the client's configuration says, since Redisson sends a command
 * again when its reply is late and an acquire would then count twice; Redisson still follows
 * {@code MOVED} and {@code ASK} (the server ran nothing). A command Redisson could not write (no
 * connection) fails as not sent. Keys go to Redis as Sluice names them, past the client's
 * {@code NameMapper}, so that limiters on other clients share their budgets. The transport holds
 * nothing of its own: closing it leaves the client open.
 */
public final class RedissonTransport implements RedisTransport {
  private static final String DEL = "return redis.call('DEL', KEYS[1])";
  /** How long {@link #of} waits for the scripts to load. */
  static final long SCRIPT_LOAD_MILLIS = 1_000;

  /** Lanes of calls kept in order; at most this many calls are in flight at once. */
  static final int LANES = 256;

  private final RScript script;
  /** Per lane, the last call issued on it: the next one is sent when it is done. */
  private final CompletableFuture<?>[] tails = new CompletableFuture<?>[LANES];

  private RedissonTransport(RScript script) {
    this.script = script;
    java.util.Arrays.fill(tails, CompletableFuture.completedFuture(null));
  }

  /**
   * A transport over {@code redisson}'s connections, sending each command once. Loads Sluice's scripts
   * on every master first, waiting at most {@value #SCRIPT_LOAD_MILLIS} ms: on a server without them
   * each call of an async burst on one key would answer {@code NOSCRIPT} and be sent again with its
   * body, and the burst's later calls could then be decided before its earlier ones. A server that
   * loses them later (a restart, {@code SCRIPT FLUSH}) is served through {@code NOSCRIPT} as before.
   */
  public static RedissonTransport of(RedissonClient redisson) {
    if (redisson == null) {
      throw new NullPointerException("redisson");
    }
    RScript script = redisson.getScript(OptionalOptions.defaults().codec(StringCodec.INSTANCE).retryAttempts(0));
    List<CompletableFuture<String>> loads = new ArrayList<>();
    try {
      for (String body : RedisTransport.scripts()) {
        loads.add(script.scriptLoadAsync(body).toCompletableFuture());
      }
      CompletableFuture.allOf(loads.toArray(new CompletableFuture<?>[0])).get(SCRIPT_LOAD_MILLIS, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException | TimeoutException | RuntimeException e) {
      // not loaded now: the first call on that server loads its script through NOSCRIPT
    }
    return new RedissonTransport(script);
  }

  @Override public CompletableFuture<List<Object>> evalsha(String sha, String[] keys, String[] args) {
    return inOrder(keys[0], () -> script.<List<Object>>evalShaAsync(keys[0], RScript.Mode.READ_WRITE, sha, RScript.ReturnType.LIST,
        raw(keys), (Object[]) args).toCompletableFuture());
  }

  @Override public CompletableFuture<List<Object>> eval(String body, String[] keys, String[] args) {
    return inOrder(keys[0], () -> script.<List<Object>>evalAsync(keys[0], RScript.Mode.READ_WRITE, body, RScript.ReturnType.LIST,
        raw(keys), (Object[]) args).toCompletableFuture());
  }

  @Override public CompletableFuture<?> del(String key) {
    return inOrder(key, () -> script.<Long>evalAsync(key, RScript.Mode.READ_WRITE, DEL, RScript.ReturnType.LONG,
        raw(new String[] {key})).toCompletableFuture());
  }

  @Override public boolean noScript(Throwable error) {
    return error instanceof RedisNoScriptException || RedisTransport.super.noScript(error);
  }

  /** Redisson's own response timeout ({@code timeout} in its configuration, 3 s by default). */
  @Override public boolean timedOut(Throwable error) {
    return error instanceof RedisTimeoutException;
  }

  /** Nothing to release: the client is the caller's. */
  @Override public void close() {
  }

  /** Keys as bytes: Redisson maps {@code String} keys through its {@code NameMapper}, never bytes. */
  private static List<Object> raw(String[] keys) {
    List<Object> out = new ArrayList<>(keys.length);
    for (String k : keys) {
      out.add(k.getBytes(StandardCharsets.UTF_8));
    }
    return out;
  }

  /**
   * The call {@code send} makes, sent once the call before it on {@code key}'s lane is done (never if
   * the result is cancelled first); fails with {@link StoreNotReachedException} when Redisson could not
   * write the command (no connection); cancelling the result cancels the command, which Redisson then
   * does not write.
   */
  private <T> CompletableFuture<T> inOrder(String key, java.util.function.Supplier<CompletableFuture<T>> send) {
    CompletableFuture<T> out = new CompletableFuture<>();
    int lane = Math.floorMod(key.hashCode(), LANES);
    CompletableFuture<?> before;
    synchronized (tails) {
      before = tails[lane];
      tails[lane] = out;
    }
    before.whenComplete((x, y) -> {
      if (!out.isDone()) {
        try {
          pass(send.get(), out);
        } catch (RuntimeException e) {
          out.completeExceptionally(e);
        }
      }
    });
    return out;
  }

  private static <T> void pass(CompletableFuture<T> f, CompletableFuture<T> out) {
    f.whenComplete((r, e) -> {
      Throwable c = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
      if (c == null) {
        out.complete(r);
      } else {
        out.completeExceptionally(c instanceof RedisConnectionException ? new StoreNotReachedException(c.getMessage(), c) : c);
      }
    });
    out.whenComplete((r, e) -> {
      if (out.isCancelled()) {
        f.cancel(false);
      }
    });
  }
}
