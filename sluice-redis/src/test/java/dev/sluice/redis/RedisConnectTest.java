package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.Reason;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.logging.Level;
import org.junit.jupiter.api.Test;

/**
 * Issue 14, finding 12: a limiter's connection start-up, on private servers (ports 7150-7152). It
 * decides on Redis as soon as Redis answers, whatever happened at {@code build()}, and closes cleanly
 * at any moment. Each test is named after what went wrong and fails without the fix.
 */
class RedisConnectTest {
  private static final String OUR_LOGGER = RedisRateLimiter.class.getName();

  private static Policy policy() {
    return Policy.fixedWindow("connect-" + UUID.randomUUID().toString().substring(0, 8), 5, Duration.ofMinutes(1));
  }

  private static void waitFor(BooleanSupplier condition, long millis, String what) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime()).as("waiting %d ms for %s", millis, what).isLessThan(deadline);
      Thread.sleep(10);
    }
  }

  /** Connections the server holds, other than the redis-cli asking. */
  private static long clients(RedisServerProcess server) {
    try {
      return RedisServerProcess.output("redis-cli", "-p", Integer.toString(server.port), "client", "list").lines()
          .filter(l -> l.contains("cmd=") && !l.contains("cmd=client|list")).count();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /** Before: after a failed first connection only a decision started another, so none did until one asked. */
  @Test void aLimiterBuiltBeforeItsServerConnectedOnlyWhenADecisionAsked() throws Exception {
    try (RedisServerProcess server = RedisServerProcess.start(7150)) {
      server.stop();
      RedisClient client = RedisClient.create(RedisURI.create(server.uri()));
      try (CapturedLogs logs = new CapturedLogs()) {
        long t0 = System.nanoTime();
        RedisRateLimiter l = RedisRateLimiter.builder(policy(), client).build();
        assertThat(System.nanoTime() - t0).as("build() against a closed port").isLessThan(TimeUnit.SECONDS.toNanos(1));
        assertThat(logs.atLeast(Level.WARNING)).singleElement().asString()
            .startsWith("WARNING " + OUR_LOGGER + ": the first connection to Redis failed (")
            .endsWith("; decisions follow the failure mode until Redis answers; a connection is tried every 25 ms until then");
        server.start();  // returns once the server answers PING
        waitFor(() -> clients(server) == 1, 1_000, "the limiter to connect without a decision asking");
        // the server lists the connection from its handshake on; the limiter uses it once Lettuce has it
        waitFor(() -> l.tryAcquire("k").path() == Path.PRIMARY, 500, "decisions on the connection");
        l.close();
        waitFor(() -> clients(server) == 0, 1_000, "close() to close the connection");
        assertThat(logs.atLeast(Level.WARNING)).hasSize(1);
        assertThat(logs.atLeast(Level.INFO)).anyMatch(m -> m.startsWith("INFO " + OUR_LOGGER + ": connected to Redis "));
      } finally {
        client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
      }
    }
  }

  /**
   * Before: a first connection that stayed pending (here a listener that accepts and never answers,
   * as a lost handshake or a loaded machine does) held back every new attempt, so every decision was
   * STORE_UNAVAILABLE after the server answered, until Lettuce gave the pending one up; and build()
   * logged two warnings for it.
   */
  @Test void aPendingFirstConnectionKeptEveryDecisionUnavailableAfterTheServerAnswered() throws Exception {
    List<Socket> held = new CopyOnWriteArrayList<>();
    ServerSocket stall = new ServerSocket(7151, 50, InetAddress.getLoopbackAddress());
    Thread acceptor = new Thread(() -> {
      try {
        held.add(stall.accept());
        // one attempt stays pending on it; the port then refuses (later attempts fail at once) until
        // the server starts there, so exactly one attempt is ever held, however the threads are timed
        stall.close();
      } catch (IOException closed) {
        // the listener is closed; the accepted socket stays open, never answered
      }
    }, "stall-acceptor");
    acceptor.setDaemon(true);
    acceptor.start();
    RedisClient client = RedisClient.create(RedisURI.create("redis://127.0.0.1:7151"));
    RedisServerProcess server = null;
    try (CapturedLogs logs = new CapturedLogs()) {
      long t0 = System.nanoTime();
      RedisRateLimiter l = RedisRateLimiter.builder(policy(), client).build();
      long took = System.nanoTime() - t0;
      assertThat(took).as("build() against a silent server").isBetween(TimeUnit.MILLISECONDS.toNanos(1_900),
          TimeUnit.MILLISECONDS.toNanos(2_500));
      assertThat(logs.atLeast(Level.WARNING)).containsExactly("WARNING " + OUR_LOGGER + ": no connection to Redis within"
          + " 2000 ms of building the limiter (still connecting); decisions follow the failure mode until Redis answers;"
          + " a connection is tried every 25 ms until then");
      assertThat(held).as("the pending connection").hasSize(1);
      assertThat(l.tryAcquire("k").reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
      server = RedisServerProcess.start(7151);  // returns once the server answers PING
      long answered = System.nanoTime();
      Decision d;
      while ((d = l.tryAcquire("k")).path() != Path.PRIMARY) {
        // the next attempt starts within RETRY_NANOS (25 ms); the rest is a loaded machine's margin
        assertThat(System.nanoTime() - answered).as("decisions on Redis after it answered; last: %s", d)
            .isLessThan(TimeUnit.MILLISECONDS.toNanos(2_000));
        Thread.sleep(10);
      }
      System.out.println("decided on Redis " + (System.nanoTime() - answered) / 1_000_000 + " ms after it answered");
      l.close();
      assertThat(logs.atLeast(Level.WARNING)).hasSize(1);
    } finally {
      stall.close();
      for (Socket s : held) {
        s.close();
      }
      client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
      if (server != null) {
        server.close();
      }
    }
  }

  /**
   * Before: closing the limiter while its connection attempt was pending, then shutting the client
   * down, made Netty log two RejectedExecutionException traces; and an attempt that close()
   * interrupted left Lettuce connecting on its own, a connection nobody owned that could stay open
   * after the client was shut down (1 run in 2). Here a proxy in front of the server holds the
   * attempts' handshakes, as a loaded machine does, until close() is waiting for them.
   */
  @Test void closingDuringAPendingConnectLoggedNettyRejections() throws Exception {
    try (RedisServerProcess server = RedisServerProcess.start(7152); HoldingProxy proxy = new HoldingProxy(7153, 7152)) {
      RedisClient client = RedisClient.create(RedisURI.create("redis://127.0.0.1:7153"));
      try (CapturedLogs logs = new CapturedLogs()) {
        RedisRateLimiter l = RedisRateLimiter.builder(policy(), client).build();
        assertThat(proxy.held()).as("the attempt's handshake is held").isPositive();
        Thread closer = new Thread(l::close, "closer");
        closer.start();
        waitFor(() -> Arrays.stream(closer.getStackTrace()).anyMatch(f -> f.getMethodName().equals("awaitNoAttempt")), 2_000,
            "close() to wait for the pending attempt");
        proxy.release();
        closer.join(TimeUnit.NANOSECONDS.toMillis(RedisLink.Owned.CLOSE_LIMIT_NANOS) + 1_000);
        assertThat(closer.isAlive()).as("close() returned").isFalse();
        client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        waitFor(() -> clients(server) == 0, 5_000, "no connection left behind");
        assertThat(logs.atLeast(Level.WARNING)).as("nothing but build()'s one warning").containsExactly("WARNING " + OUR_LOGGER
            + ": no connection to Redis within 2000 ms of building the limiter (still connecting); decisions follow the"
            + " failure mode until Redis answers; a connection is tried every 25 ms until then");
      } finally {
        client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
      }
    }
  }

  /** A TCP proxy that holds every connection it accepts until {@link #release()}, then forwards it to the backend. */
  private static final class HoldingProxy implements AutoCloseable {
    private final ServerSocket listener;
    private final int backend;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final List<Socket> waiting = new CopyOnWriteArrayList<>();
    private volatile boolean released;

    HoldingProxy(int port, int backend) throws IOException {
      this.backend = backend;
      listener = new ServerSocket(port, 50, InetAddress.getLoopbackAddress());
      Thread acceptor = new Thread(() -> {
        try {
          while (true) {
            Socket s = listener.accept();
            sockets.add(s);
            synchronized (this) {
              if (released) {
                forward(s);
              } else {
                waiting.add(s);
              }
            }
          }
        } catch (IOException closed) {
          // the proxy is closed
        }
      }, "proxy-acceptor");
      acceptor.setDaemon(true);
      acceptor.start();
    }

    int held() {
      return waiting.size();
    }

    synchronized void release() throws IOException {
      released = true;
      for (Socket s : waiting) {
        forward(s);
      }
      waiting.clear();
    }

    private void forward(Socket in) throws IOException {
      Socket out = new Socket(InetAddress.getLoopbackAddress(), backend);
      sockets.add(out);
      pump(in, out);
      pump(out, in);
    }

    private static void pump(Socket from, Socket to) {
      Thread t = new Thread(() -> {
        try {
          from.getInputStream().transferTo(to.getOutputStream());
        } catch (IOException closed) {
          // one side closed
        } finally {
          try {
            to.close();
            from.close();
          } catch (IOException ignored) {
            // closing
          }
        }
      }, "proxy-pump");
      t.setDaemon(true);
      t.start();
    }

    @Override public void close() throws IOException {
      listener.close();
      for (Socket s : sockets) {
        s.close();
      }
    }
  }
}
