package dev.sluice.redis;

import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;

/**
 * The limiter's way to Redis: the async command interface of a live connection, or null when there
 * is none right now (so that a decision fails at once instead of queueing behind a dead socket).
 */
abstract class RedisLink implements AutoCloseable {

  /** Commands of a connected connection, or null when disconnected (the caller fails the decision). */
  abstract RedisClusterAsyncCommands<String, String> commands();

  @Override public abstract void close();

  @SuppressWarnings("unchecked")
  static RedisClusterAsyncCommands<String, String> asyncOf(StatefulConnection<String, String> c) {
    if (c instanceof StatefulRedisClusterConnection<String, String> cc) {
      return cc.async();
    }
    return ((StatefulRedisConnection<String, String>) c).async();
  }

  /** A connection the user owns: used as is, never closed by us; Lettuce's auto-reconnect restores it. */
  static final class Borrowed extends RedisLink {
    private final StatefulConnection<String, String> connection;
    private final RedisClusterAsyncCommands<String, String> commands;
    private volatile boolean closed;

    Borrowed(StatefulConnection<String, String> connection) {
      this.connection = connection;
      this.commands = asyncOf(connection);
    }

    @Override RedisClusterAsyncCommands<String, String> commands() {
      return !closed && connection.isOpen() ? commands : null;
    }

    @Override public void close() {
      closed = true;
    }
  }

  /**
   * A connection this limiter opened from the user's client, and reopens itself. Lettuce reconnects a
   * dropped connection too, but with an exponential back-off that can reach seconds after a long
   * outage; this link also tries a fresh connection at most every {@link #RETRY_NANOS} while it has
   * none, on a background thread, so decisions recover within a fraction of a second of the server
   * returning. Whichever connection comes back first is used; the other is closed.
   */
  static final class Owned extends RedisLink {
    static final long RETRY_NANOS = 100_000_000L;
    static final long INITIAL_WAIT_MILLIS = 2_000;
    private static final System.Logger LOG = System.getLogger(RedisRateLimiter.class.getName());
    private static final ExecutorService CONNECTOR = Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "sluice-redis-connect");
      t.setDaemon(true);
      return t;
    });

    private final Supplier<StatefulConnection<String, String>> connector;
    private final AtomicBoolean connecting = new AtomicBoolean();
    private volatile StatefulConnection<String, String> connection;
    private volatile RedisClusterAsyncCommands<String, String> commands;
    private volatile long lastAttemptNanos;
    private volatile boolean closed;

    Owned(Supplier<StatefulConnection<String, String>> connector) {
      this.connector = connector;
      lastAttemptNanos = System.nanoTime();
      connecting.set(true);
      // The first connection is made on the connector thread and awaited for at most
      // INITIAL_WAIT_MILLIS, so that build() cannot hang on a frozen server for the client's timeouts.
      Future<?> first = CONNECTOR.submit(this::connectOnce);
      try {
        first.get(INITIAL_WAIT_MILLIS, TimeUnit.MILLISECONDS);
      } catch (TimeoutException e) {
        LOG.log(System.Logger.Level.WARNING, "Redis did not accept a connection within " + INITIAL_WAIT_MILLIS
            + " ms; decisions follow the failure mode until it does");
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (ExecutionException e) {
        // connectOnce catches everything; nothing to report here
      }
      if (connection == null) {
        LOG.log(System.Logger.Level.WARNING, "Redis is not reachable yet; decisions follow the failure mode until it is");
      }
    }

    @Override RedisClusterAsyncCommands<String, String> commands() {
      StatefulConnection<String, String> c = connection;
      if (c != null && c.isOpen()) {
        return commands;
      }
      maybeReconnect();
      return null;
    }

    private void maybeReconnect() {
      long now = System.nanoTime();
      if (closed || now - lastAttemptNanos < RETRY_NANOS || !connecting.compareAndSet(false, true)) {
        return;
      }
      lastAttemptNanos = now;
      try {
        CONNECTOR.execute(this::connectOnce);
      } catch (RuntimeException e) {
        connecting.set(false);
      }
    }

    /** One connection attempt (on the connector thread); the caller has set {@code connecting}. */
    private void connectOnce() {
      try {
        StatefulConnection<String, String> fresh = connector.get();
        StatefulConnection<String, String> current = connection;
        if (closed || (current != null && current.isOpen())) {
          fresh.closeAsync();
        } else {
          attach(fresh);
          if (current != null) {
            current.closeAsync();
          }
          if (closed) {
            fresh.closeAsync();
          }
        }
      } catch (RuntimeException e) {
        // Still down: the next decision after RETRY_NANOS tries again.
      } finally {
        lastAttemptNanos = System.nanoTime();
        connecting.set(false);
      }
    }

    private void attach(StatefulConnection<String, String> c) {
      commands = asyncOf(c);
      connection = c;
    }

    @Override public void close() {
      closed = true;
      StatefulConnection<String, String> c = connection;
      if (c != null) {
        c.close();
      }
    }
  }
}
