package dev.sluice.redis;

import dev.sluice.redis.internal.RedisScript;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * How the Redis backend reaches Redis: run one of Sluice's scripts by its SHA-1 with keys and
 * arguments, run its body when the server has lost it, delete a key. Everything else (the scripts,
 * their hash-tagged keys, the clock argument, the NOSCRIPT reload, the deadline of every call, the
 * reply's reading) is the backend's, the same for every client. Lettuce's adapter is built in
 * ({@link RedisRateLimiter#builder(dev.sluice.Policy, io.lettuce.core.RedisClient)} and its siblings);
 * another client (Redisson, Jedis, a user's own) is an adapter of this interface, handed to
 * {@link RedisRateLimiter#builder(dev.sluice.Policy, RedisTransport)}.
 *
 * <p>Every method answers with a future and must not block for the server: the backend waits for it
 * at most the call's deadline, then cancels it (an adapter that can keep a command still queued from
 * being sent does so on cancellation). A client that only blocks completes the future on its own
 * threads. When nothing can be sent (no connection right now), a method throws
 * {@link dev.sluice.spi.StoreNotReachedException} or fails its future with one, so that a refund
 * is known not to have applied. Replies are what the client reads of a Lua table of integers: a
 * {@code List} of {@code Long}.
 *
 * <p>A transport should send a command at most once: a client that sends commands again after a
 * reconnect when their reply was lost can charge an acquire twice (Lettuce's adapter fails such
 * commands first). It may load {@link #scripts()} on each new connection, so that the first calls
 * after a connect do not pay a NOSCRIPT round trip.
 */
public interface RedisTransport extends AutoCloseable {
  /** {@code EVALSHA sha} with {@code keys} and {@code args}: the script's reply, a list of integers. */
  CompletableFuture<List<Object>> evalsha(String sha, String[] keys, String[] args);

  /** {@code EVAL body} with {@code keys} and {@code args}, which also caches the script on that server. */
  CompletableFuture<List<Object>> eval(String body, String[] keys, String[] args);

  /** {@code DEL key}. */
  CompletableFuture<?> del(String key);

  /**
   * Whether {@code error} (unwrapped from the future) is the server's {@code NOSCRIPT}: the backend
   * then sends the body with {@link #eval}. The default reads the server's error text.
   */
  default boolean noScript(Throwable error) {
    String m = error == null ? null : error.getMessage();
    return m != null && m.startsWith("NOSCRIPT");
  }

  /** Whether {@code error} is the client's own timeout (a {@link dev.sluice.Reason#TIMEOUT}); false by default. */
  default boolean timedOut(Throwable error) {
    return false;
  }

  /** Releases what the transport opened itself; the limiter closes only a transport it made. */
  @Override void close();

  /** The bodies of Sluice's scripts, for a transport that loads them ({@code SCRIPT LOAD}) on each new connection. */
  static List<String> scripts() {
    return Arrays.stream(RedisScript.values()).map(s -> s.body).toList();
  }
}
