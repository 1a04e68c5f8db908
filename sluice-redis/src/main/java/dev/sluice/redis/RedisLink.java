package dev.sluice.redis;

import dev.sluice.redis.internal.RedisScript;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisChannelHandler;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisConnectionStateListener;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * The limiter's way to Redis: the async command interface of a live connection, or null when there
 * is none right now (so that a decision fails at once instead of queueing behind a dead socket).
 */
abstract class RedisLink implements AutoCloseable {

  /** Commands of a connected connection, or null when disconnected (the caller fails the decision). */
  abstract RedisClusterAsyncCommands<String, String> commands();

  @Override public abstract void close();

  /**
   * The commands sent and not yet answered, each with the commands object (so the connection) it went
   * through. When that connection drops they are failed at once, before Lettuce can send them again.
   */
  private final Map<RedisFuture<?>, Object> unanswered = new ConcurrentHashMap<>();

  /**
   * {@code f}, a script sent through {@code via}, kept until it is answered. Lettuce, left to itself,
   * sends every command still unanswered when a connection drops again once it reconnects (its
   * at-least-once default); a script whose reply was lost would then run twice: an acquire charged
   * twice, which no ticket can undo. {@link #connectionLost} fails such commands first, and Lettuce
   * sends no command that is done: each script is sent at most once per call.
   */
  <T> RedisFuture<T> sent(RedisClusterAsyncCommands<String, String> via, RedisFuture<T> f) {
    unanswered.put(f, via);
    f.whenComplete((r, e) -> unanswered.remove(f));
    return f;
  }

  /**
   * The connection behind {@code handler} dropped: every command sent through it and not answered
   * fails now, as a call whose outcome is unknown (the script may have run). Runs on the connection's
   * event loop as Lettuce reports the drop, before it reconnects and sends its buffer again.
   */
  void connectionLost(RedisChannelHandler<?, ?> handler) {
    Object via = handler instanceof StatefulRedisConnection<?, ?> c ? c.async() : null;
    if (via == null || unanswered.isEmpty()) {
      return;
    }
    RedisConnectionException lost = null;
    for (Map.Entry<RedisFuture<?>, Object> e : unanswered.entrySet()) {
      if (e.getValue() == via && e.getKey() instanceof CompletableFuture<?> f && !f.isDone()) {
        if (lost == null) {
          lost = new RedisConnectionException("the connection to Redis dropped before the reply came; the script may have run");
        }
        f.completeExceptionally(lost);
      }
    }
  }

  /**
   * Warns once per {@code holder} (a connection or client handed to the limiter) when its options let
   * Lettuce send a command again after a drop, where {@link #connectionLost} cannot stop it: a
   * connection the caller owns (no client to hear its drops from) and a Cluster (Lettuce's cluster
   * commands are sent again whatever the limiter completes). With
   * {@code ClientOptions.disconnectedBehavior(REJECT_COMMANDS)} Lettuce fails them itself.
   */
  static void warnIfScriptsMayRunTwice(Object holder, ClientOptions options) {
    if (options == null || options.isRejectCommandsWhileDisconnected()) {
      return;
    }
    synchronized (WARNED) {
      if (!WARNED.add(holder)) {
        return;
      }
    }
    Owned.LOG.log(System.Logger.Level.WARNING, "this Redis " + (holder instanceof AbstractRedisClient ? "client" : "connection")
        + " sends a command again after a reconnect when its reply was lost, so an acquire in flight when the connection"
        + " drops may be charged twice (refunds and settlements are not: their scripts record the ticket); set"
        + " ClientOptions.disconnectedBehavior(DisconnectedBehavior.REJECT_COMMANDS) on the client"
        + (holder instanceof AbstractRedisClient ? "" : ", or build the limiter on the client so that it opens its own connection"));
  }

  private static final Set<Object> WARNED = java.util.Collections.newSetFromMap(new java.util.WeakHashMap<>());

  /** Number of commands sent and not yet answered (tests). */
  int unanswered() {
    return unanswered.size();
  }

  /** How long {@link #asyncOf} waits for the scripts to load. */
  static final long SCRIPT_LOAD_MILLIS = 1_000;

  /**
   * The async commands of {@code c}, with every script loaded first (on a Cluster, on every node). A
   * server without a script answers {@code NOSCRIPT} and the request is sent again with its body;
   * during a burst of async calls on one key, later calls' {@code EVALSHA}s then ran before earlier
   * calls' {@code EVAL}s, out of issue order. Loaded here, before the connection decides, a burst keeps
   * its order; a server that loses its cache later (a restart, {@code SCRIPT FLUSH}, a new node) is
   * served as before. A server that does not answer within {@value #SCRIPT_LOAD_MILLIS} ms is left
   * to {@code NOSCRIPT}.
   */
  @SuppressWarnings("unchecked")
  static RedisClusterAsyncCommands<String, String> asyncOf(StatefulConnection<String, String> c) {
    RedisClusterAsyncCommands<String, String> commands = c instanceof StatefulRedisClusterConnection<String, String> cc
        ? cc.async() : ((StatefulRedisConnection<String, String>) c).async();
    List<CompletableFuture<String>> loads = new ArrayList<>();
    try {
      for (RedisScript script : RedisScript.values()) {
        loads.add(commands.scriptLoad(script.body).toCompletableFuture());
      }
      CompletableFuture.allOf(loads.toArray(new CompletableFuture<?>[0])).get(SCRIPT_LOAD_MILLIS, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException | TimeoutException | RuntimeException e) {
      // Not loaded now: the first call on that server loads its script through NOSCRIPT, as before.
    }
    return commands;
  }

  /** A connection the user owns: used as is, never closed by us; Lettuce's auto-reconnect restores it. */
  static final class Borrowed extends RedisLink {
    private final StatefulConnection<String, String> connection;
    private final RedisClusterAsyncCommands<String, String> commands;
    private volatile boolean closed;

    Borrowed(StatefulConnection<String, String> connection) {
      this.connection = connection;
      this.commands = asyncOf(connection);
      warnIfScriptsMayRunTwice(connection, connection.getOptions());
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
   * outage; this link also tries a fresh connection every {@link #RETRY_NANOS} while it has none, on
   * connector threads: on a timer from {@code build()} until it is connected (so it decides on Redis as
   * soon as Redis answers, whether or not decisions are asking), and again whenever a decision finds
   * the connection gone. Whichever connection comes back first is used; the others are closed.
   *
   * <ul>
   *   <li>An attempt still pending after {@link #STALE_NANOS} (a lost handshake, a server that accepted
   *       the socket but never answers) no longer holds the next one back; at most
   *       {@link #MAX_PENDING} are pending at once.
   *   <li>{@link #close} stops the timer and waits (at most {@link #CLOSE_LIMIT_NANOS}) for the attempts in
   *       flight to end, and closes whatever they connected: when it returns no attempt of this link is
   *       inside Lettuce any more, so the client may be shut down at once. It never interrupts an
   *       attempt: an interrupted {@code connect} returns while Lettuce goes on connecting, and the
   *       connection it then makes belongs to nobody (it stayed open after the client was shut down).
   *       An attempt still pending at the limit (a server that never answers its handshake) closes what
   *       it connects itself when it ends.
   * </ul>
   */
  static final class Owned extends RedisLink {
    /**
     * How often a fresh connection is tried while there is none: 25 ms, so that decisions are back on
     * Redis within 100 ms of its return (25 ms, the handshake and the script load); at 100 ms the wait
     * alone could use it up (issue 26, finding 1). A refused attempt costs about 1.3 ms of CPU.
     */
    static final long RETRY_NANOS = 25_000_000L;
    static final long STALE_NANOS = 1_000_000_000L;
    static final int MAX_PENDING = 3;
    static final long INITIAL_WAIT_MILLIS = 2_000;
    /** How long close() waits for attempts in flight to end (one against a live server takes milliseconds). */
    static final long CLOSE_LIMIT_NANOS = 2_000_000_000L;
    static final System.Logger LOG = System.getLogger(RedisRateLimiter.class.getName());
    private static final ExecutorService CONNECTOR = Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "sluice-redis-connect");
      t.setDaemon(true);
      return t;
    });
    private static final ScheduledExecutorService TIMER = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "sluice-redis-reconnect");
      t.setDaemon(true);
      return t;
    });

    private final Supplier<StatefulConnection<String, String>> connector;
    private final AbstractRedisClient client;
    private final RedisConnectionStateListener drops = new RedisConnectionStateListener() {
      @Override public void onRedisDisconnected(RedisChannelHandler<?, ?> connection) {
        connectionLost(connection);
      }
    };
    private final long builtAtNanos = System.nanoTime();
    private volatile StatefulConnection<String, String> connection;
    private volatile RedisClusterAsyncCommands<String, String> commands;
    // guarded by this
    private final Set<Thread> inFlight = new HashSet<>();
    private int starting;
    private long lastStartNanos;
    private boolean closed;
    private boolean warned;
    private RuntimeException lastFailure;
    private ScheduledFuture<?> retries;

    Owned(Supplier<StatefulConnection<String, String>> connector, AbstractRedisClient client) {
      this.connector = connector;
      this.client = client;
      client.addListener(drops); // before the first connection: no drop goes unseen
      if (client instanceof RedisClusterClient cluster) {
        warnIfScriptsMayRunTwice(client, cluster.getOptions());
      }
      // The first attempt is awaited for at most INITIAL_WAIT_MILLIS, so that build() cannot hang on a
      // frozen server for the client's timeouts, and no longer than it takes to fail.
      synchronized (this) {
        start(System.nanoTime());
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(INITIAL_WAIT_MILLIS);
        try {
          for (long left; connection == null && (starting > 0 || !inFlight.isEmpty())
              && (left = deadline - System.nanoTime()) > 0; ) {
            TimeUnit.NANOSECONDS.timedWait(this, left);
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        if (connection == null) {
          warned = true;
          LOG.log(System.Logger.Level.WARNING, (starting > 0 || !inFlight.isEmpty()
              ? "no connection to Redis within " + INITIAL_WAIT_MILLIS + " ms of building the limiter (still connecting)"
              : "the first connection to Redis failed (" + lastFailure + ")")
              + "; decisions follow the failure mode until Redis answers; a connection is tried every "
              + RETRY_NANOS / 1_000_000 + " ms until then");
        }
      }
      retrying();
    }

    @Override RedisClusterAsyncCommands<String, String> commands() {
      StatefulConnection<String, String> c = connection;
      if (c != null && c.isOpen()) {
        return commands;
      }
      retrying();
      maybeReconnect(System.nanoTime());
      return null;
    }

    private boolean connected() {
      StatefulConnection<String, String> c = connection;
      return c != null && c.isOpen();
    }

    /** Starts the retry timer unless it runs (or the link is closed); it stops itself once connected. */
    private synchronized void retrying() {
      if (!closed && retries == null && !connected()) {
        retries = TIMER.scheduleWithFixedDelay(this::tick, RETRY_NANOS, RETRY_NANOS, TimeUnit.NANOSECONDS);
      }
    }

    private void tick() {
      if (connected()) {
        synchronized (this) {
          if (retries != null) {
            retries.cancel(false);
            retries = null;
          }
        }
        return;
      }
      maybeReconnect(System.nanoTime());
    }

    private void maybeReconnect(long now) {
      if (connected()) {
        return;
      }
      synchronized (this) {
        if (closed || now - lastStartNanos < RETRY_NANOS) {
          return;
        }
        int pending = starting + inFlight.size();
        if (pending > 0 && (now - lastStartNanos < STALE_NANOS || pending >= MAX_PENDING)) {
          return;
        }
        start(now);
      }
    }

    /** Starts one attempt on a connector thread; holds the lock. */
    private void start(long now) {
      lastStartNanos = now;
      starting++;
      try {
        CONNECTOR.execute(this::attempt);
      } catch (RuntimeException e) {
        starting--;
      }
    }

    /** One connection attempt, on a connector thread. */
    private void attempt() {
      Thread self = Thread.currentThread();
      synchronized (this) {
        starting--;
        if (closed) {
          notifyAll();
          return;
        }
        inFlight.add(self);
      }
      StatefulConnection<String, String> fresh = null;
      StatefulConnection<String, String> replaced = null;
      boolean used = false;
      try {
        fresh = connector.get();
        RedisClusterAsyncCommands<String, String> freshCommands = asyncOf(fresh); // its scripts loaded outside the lock
        synchronized (this) {
          StatefulConnection<String, String> current = connection;
          if (!closed && (current == null || !current.isOpen())) {
            commands = freshCommands;
            connection = fresh;
            replaced = current;
            used = true;
            if (warned) {
              warned = false;
              LOG.log(System.Logger.Level.INFO, "connected to Redis " + (System.nanoTime() - builtAtNanos) / 1_000_000
                  + " ms after the limiter was built; decisions use it");
            }
          }
        }
      } catch (RuntimeException e) {
        // Still down: the timer tries again after RETRY_NANOS.
        synchronized (this) {
          lastFailure = e;
        }
      } finally {
        try {
          if (fresh != null && !used) {
            fresh.close();  // closed, or another attempt won
          }
          if (replaced != null) {
            replaced.closeAsync();
          }
        } catch (RuntimeException e) {
          // closing a connection we never used: nothing to report
        } finally {
          synchronized (this) {
            inFlight.remove(self);
            notifyAll();
          }
        }
      }
    }

    @Override public void close() {
      synchronized (this) {
        closed = true;
        if (retries != null) {
          retries.cancel(false);
          retries = null;
        }
        try {
          awaitNoAttempt(System.nanoTime() + CLOSE_LIMIT_NANOS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      StatefulConnection<String, String> c = connection;
      if (c != null) {
        c.close();
      }
      client.removeListener(drops);
    }

    /** Waits, holding the lock, until no attempt is starting or in flight, or {@code deadline} passes. */
    private void awaitNoAttempt(long deadline) throws InterruptedException {
      for (long left; (starting > 0 || !inFlight.isEmpty()) && (left = deadline - System.nanoTime()) > 0; ) {
        TimeUnit.NANOSECONDS.timedWait(this, left);
      }
    }
  }
}
