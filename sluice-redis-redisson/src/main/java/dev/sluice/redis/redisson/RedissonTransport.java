package dev.sluice.redis.redisson;

import dev.sluice.redis.RedisTransport;
import dev.sluice.spi.StoreNotReachedException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
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
 * deadline (a command Redisson has not written yet is then never written). Sluice's calls run with
 * {@code retryAttempts} 0, whatever the client's configuration says, since Redisson sends a command
 * again when its reply is late and an acquire would then count twice; Redisson still follows
 * {@code MOVED} and {@code ASK} (the server ran nothing). A command Redisson could not write (no
 * connection) fails as not sent. Keys go to Redis as Sluice names them, past the client's
 * {@code NameMapper}, so that limiters on other clients share their budgets. The transport holds
 * nothing of its own: closing it leaves the client open.
 */
public final class RedissonTransport implements RedisTransport {
  private static final String DEL = "return redis.call('DEL', KEYS[1])";

  private final RScript script;

  private RedissonTransport(RScript script) {
    this.script = script;
  }

  /** A transport over {@code redisson}'s connections, sending each command once. */
  public static RedissonTransport of(RedissonClient redisson) {
    if (redisson == null) {
      throw new NullPointerException("redisson");
    }
    return new RedissonTransport(redisson.getScript(OptionalOptions.defaults().codec(StringCodec.INSTANCE).retryAttempts(0)));
  }

  @Override public CompletableFuture<List<Object>> evalsha(String sha, String[] keys, String[] args) {
    return sent(script.<List<Object>>evalShaAsync(keys[0], RScript.Mode.READ_WRITE, sha, RScript.ReturnType.LIST, raw(keys), (Object[]) args)
        .toCompletableFuture());
  }

  @Override public CompletableFuture<List<Object>> eval(String body, String[] keys, String[] args) {
    return sent(script.<List<Object>>evalAsync(keys[0], RScript.Mode.READ_WRITE, body, RScript.ReturnType.LIST, raw(keys), (Object[]) args)
        .toCompletableFuture());
  }

  @Override public CompletableFuture<?> del(String key) {
    return sent(script.evalAsync(key, RScript.Mode.READ_WRITE, DEL, RScript.ReturnType.LONG, raw(new String[] {key}))
        .toCompletableFuture());
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
   * {@code f}, failing with {@link StoreNotReachedException} when Redisson could not write the command
   * (no connection); cancelling the result cancels {@code f}, which Redisson then does not write.
   */
  private static <T> CompletableFuture<T> sent(CompletableFuture<T> f) {
    CompletableFuture<T> out = new CompletableFuture<>();
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
    return out;
  }
}
