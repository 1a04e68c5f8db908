package dev.sluice.redis.jedis;

import dev.sluice.redis.RedisTransport;
import dev.sluice.spi.StoreNotReachedException;
import java.net.ConnectException;
import java.net.SocketTimeoutException;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisNoScriptException;

/**
 * The {@link RedisTransport} over Jedis: any {@link UnifiedJedis} ({@code RedisClient} or
 * {@code JedisPooled} standalone, {@code RedisClusterClient} or {@code JedisCluster}), built with
 * {@link dev.sluice.redis.RedisRateLimiter#builder(dev.sluice.Policy, RedisTransport)}:
 *
 * <pre>{@code
 * JedisTransport redis = JedisTransport.of(jedis);   // close it after the limiters, before jedis
 * RedisRateLimiter limiter = RedisRateLimiter.builder(policy, redis).timeout(Duration.ofMillis(100)).build();
 * }</pre>
 *
 * <p>Jedis only blocks, so every command runs on one of a few threads the transport owns (lanes,
 * {@value #DEFAULT_THREADS} unless told; as many as the client's connection pool lends at once is
 * enough), and its future completes there: a caller waits at most the limiter's deadline, at which the
 * future is cancelled, and a command still queued then is never sent. The commands on one key go
 * through one lane, so that Redis decides them in the order they were issued (an async burst on one
 * key is decided as the model decides it, request by request). A command already sent holds its lane
 * until Redis answers or the client's socket timeout ends the read: set that timeout (Jedis' default
 * is 2 s) to a few times the limiter's, so that a frozen server holds a lane no longer. When
 * {@value #QUEUE} commands wait for a lane, a call on it fails at once as not sent.
 *
 * <p>A command is sent at most once only if the client does not send it again after a lost reply:
 * a standalone client built as usual does not; a Cluster client does unless it is built with
 * {@code maxAttempts} 1 (it then follows no redirect either: a call that meets {@code MOVED} fails,
 * and the client has renewed its slot map for the next one).
 *
 * <p>A pool the application holds as something else than a {@code UnifiedJedis} (Spring Data Redis's
 * {@code JedisConnectionFactory} lends a {@link Jedis} per connection) is used through
 * {@link #borrowing(Supplier, int)}: each command borrows one connection and gives it back.
 */
public final class JedisTransport implements RedisTransport {
  /** Threads sending commands unless {@link #of(UnifiedJedis, int)} says otherwise: Jedis' default pool size. */
  public static final int DEFAULT_THREADS = 8;
  /** Commands that may wait for a lane before a call on it fails as not sent. */
  static final int QUEUE = 1024;

  private final Commands jedis;
  /** One thread each; a key's commands always take the same one. */
  private final ThreadPoolExecutor[] lanes;

  private JedisTransport(Commands jedis, int threads) {
    if (threads < 1) {
      throw new IllegalArgumentException("threads " + threads + " is less than 1");
    }
    this.jedis = jedis;
    this.lanes = new ThreadPoolExecutor[threads];
    for (int i = 0; i < threads; i++) {
      String name = "sluice-jedis-" + i;
      lanes[i] = new ThreadPoolExecutor(1, 1, 30, TimeUnit.SECONDS, new ArrayBlockingQueue<>(QUEUE), r -> {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
      });
      lanes[i].allowCoreThreadTimeOut(true);
    }
  }

  /** A transport over {@code jedis} with {@value #DEFAULT_THREADS} threads; closing it leaves {@code jedis} open. */
  public static JedisTransport of(UnifiedJedis jedis) {
    return of(jedis, DEFAULT_THREADS);
  }

  /**
   * A transport over {@code jedis} sending on {@code threads} lanes (at most the client's pool size is
   * useful). Sluice's scripts are loaded first ({@code SCRIPT LOAD}, which Jedis sends to every master
   * of a Cluster), so that the first calls on a node do not meet {@code NOSCRIPT}: its reload sends
   * the body again behind later calls of the same key, which would decide a burst out of its order.
   * A server that does not answer yet is left to that reload.
   */
  public static JedisTransport of(UnifiedJedis jedis, int threads) {
    if (jedis == null) {
      throw new NullPointerException("jedis");
    }
    return loaded(new JedisTransport(new Commands() {
      @Override public Object evalsha(String sha, List<String> keys, List<String> args) {
        return jedis.evalsha(sha, keys, args);
      }

      @Override public Object eval(String body, List<String> keys, List<String> args) {
        return jedis.eval(body, keys, args);
      }

      @Override public long del(String key) {
        return jedis.del(key);
      }

      @Override public void scriptLoad(String body) {
        jedis.scriptLoad(body);
      }
    }, threads));
  }

  /**
   * A transport that takes a connection from {@code connections} for each command and closes it once
   * answered (a {@link Jedis} from a pool goes back to it, or is dropped when its socket broke), sending
   * on {@code threads} lanes: for a pool that is not a {@code UnifiedJedis}, such as Spring Data Redis's
   * {@code JedisConnectionFactory} ({@code () -> (Jedis) factory.getConnection().getNativeConnection()}).
   * One command per decision still: borrowing sends nothing unless the pool is told to test its
   * connections. Closing the transport leaves the pool open.
   */
  public static JedisTransport borrowing(Supplier<? extends Jedis> connections, int threads) {
    if (connections == null) {
      throw new NullPointerException("connections");
    }
    return loaded(new JedisTransport(new Commands() {
      @Override public Object evalsha(String sha, List<String> keys, List<String> args) {
        try (Jedis j = connections.get()) {
          return j.evalsha(sha, keys, args);
        }
      }

      @Override public Object eval(String body, List<String> keys, List<String> args) {
        try (Jedis j = connections.get()) {
          return j.eval(body, keys, args);
        }
      }

      @Override public long del(String key) {
        try (Jedis j = connections.get()) {
          return j.del(key);
        }
      }

      @Override public void scriptLoad(String body) {
        try (Jedis j = connections.get()) {
          j.scriptLoad(body);
        }
      }
    }, threads));
  }

  /** {@code t} once Sluice's scripts are loaded, or tried to be (see {@link #of(UnifiedJedis, int)}). */
  private static JedisTransport loaded(JedisTransport t) {
    try {
      for (String body : RedisTransport.scripts()) {
        t.jedis.scriptLoad(body);
      }
    } catch (RuntimeException e) {
      System.getLogger(JedisTransport.class.getName()).log(System.Logger.Level.DEBUG,
          "scripts not loaded now (NOSCRIPT will load them): " + e);
    }
    return t;
  }

  /** What the transport sends, on a {@code UnifiedJedis} or on a borrowed {@link Jedis}. */
  private interface Commands {
    Object evalsha(String sha, List<String> keys, List<String> args);

    Object eval(String body, List<String> keys, List<String> args);

    long del(String key);

    void scriptLoad(String body);
  }

  @Override public CompletableFuture<List<Object>> evalsha(String sha, String[] keys, String[] args) {
    return call(keys[0], () -> reply(jedis.evalsha(sha, List.of(keys), List.of(args))));
  }

  @Override public CompletableFuture<List<Object>> eval(String body, String[] keys, String[] args) {
    return call(keys[0], () -> reply(jedis.eval(body, List.of(keys), List.of(args))));
  }

  @Override public CompletableFuture<?> del(String key) {
    return call(key, () -> jedis.del(key));
  }

  @Override public boolean noScript(Throwable error) {
    return error instanceof JedisNoScriptException || RedisTransport.super.noScript(error);
  }

  /** Jedis' socket timeout: a read that outlived it. */
  @Override public boolean timedOut(Throwable error) {
    return error instanceof JedisConnectionException && cause(error, SocketTimeoutException.class);
  }

  /** Stops the lanes (a command being sent finishes on its own); the client stays open. */
  @Override public void close() {
    for (ThreadPoolExecutor lane : lanes) {
      lane.shutdown();
    }
  }

  /**
   * {@code command} on {@code key}'s lane; skipped when the future is done (cancelled at its deadline)
   * before the lane takes it. A refused connection is {@link StoreNotReachedException}: nothing was sent.
   */
  private <T> CompletableFuture<T> call(String key, Supplier<T> command) {
    CompletableFuture<T> f = new CompletableFuture<>();
    ThreadPoolExecutor lane = lanes[Math.floorMod(key.hashCode(), lanes.length)];
    try {
      lane.execute(() -> {
        if (f.isDone()) {
          return;
        }
        try {
          f.complete(command.get());
        } catch (JedisConnectionException e) {
          f.completeExceptionally(cause(e, ConnectException.class) ? new StoreNotReachedException("Redis refused the connection", e) : e);
        } catch (RuntimeException | Error e) {
          f.completeExceptionally(e);
        }
      });
    } catch (RejectedExecutionException e) {
      throw new StoreNotReachedException(lane.isShutdown() ? "the Jedis transport is closed"
          : QUEUE + " commands already wait for this key's Jedis lane", e);
    }
    return f;
  }

  @SuppressWarnings("unchecked")
  private static List<Object> reply(Object r) {
    return (List<Object>) r;  // a Lua table of integers: a List of Long (RedisBackend checks its shape)
  }

  private static boolean cause(Throwable e, Class<? extends Throwable> type) {
    for (Throwable c = e; c != null; c = c.getCause()) {
      if (type.isInstance(c)) {
        return true;
      }
    }
    return false;
  }
}
