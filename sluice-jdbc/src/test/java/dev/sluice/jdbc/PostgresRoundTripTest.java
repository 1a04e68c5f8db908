package dev.sluice.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Policy;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Counts network round trips on the wire: a proxy between the driver and the server counts the
 * server's ReadyForQuery messages, which the server sends once per Sync, that is once per round trip
 * of the extended query protocol. Plain mode and tenant mode (set_config + decision, sent together)
 * are both one round trip per decision.
 */
class PostgresRoundTripTest {

  @Test
  void everyDecisionIsOneRoundTripInPlainAndInTenantMode() throws Exception {
    Policy p = Policy.gcra(PostgresTestSupport.name("round-trip"), 5, Duration.ofSeconds(10), 5);
    long[] trips = roundTripsInBothModes(p, l -> {
      int allowed = 0;
      for (int i = 0; i < 12; i++) {
        allowed += l.tryAcquire("user:1").allowed() ? 1 : 0; // 5 allowed, 7 refused
      }
      l.peek("user:1");
      assertThat(allowed).isEqualTo(5);
    });
    System.err.printf("[round trips] 13 calls: plain mode %d round trips, tenant mode %d%n", trips[0], trips[1]);
    assertThat(trips).containsExactly(13, 13);
  }

  /**
   * Issue 18: a coalesced batch (the batch statement, its permits sent as one array) is one round
   * trip on the wire, in plain and in tenant mode, however many requests it decides.
   */
  @Test
  void aCoalescedBatchIsOneRoundTripInPlainAndInTenantMode() throws Exception {
    Policy p = Policy.tokenBucket(PostgresTestSupport.name("batch-trips"), 20, 1, Duration.ofMinutes(1));
    long[] trips = roundTripsInBothModes(p, l -> {
      long admitted = 0;
      for (int b = 0; b < 4; b++) { // a new row, then the row locked twice, then every request refused unlocked
        for (dev.sluice.spi.StepResult r : l.backend.stepBatch(p, l.backend.batchScope(p), "user:1", new long[] {3, 1, 4, 1, 5}, 0,
            System.nanoTime() + Duration.ofSeconds(5).toNanos())) {
          admitted += r.allowed() ? 1 : 0;
        }
      }
      // 20 tokens: all five (14), then 3, 1, 1 (19), then the last 1 (20), then none
      assertThat(admitted).isEqualTo(5 + 3 + 1);
    });
    System.err.printf("[round trips] 4 batches of 5: plain mode %d round trips, tenant mode %d%n", trips[0], trips[1]);
    assertThat(trips).containsExactly(4, 4);
  }

  /** Calls made on a limiter. */
  private interface Calls {
    void on(JdbcRateLimiter limiter) throws Exception;
  }

  /** The round trips {@code calls} took on a plain-mode and on a tenant-mode limiter of {@code p}, through a proxy. */
  private static long[] roundTripsInBothModes(Policy p, Calls calls) throws Exception {
    PostgresTestSupport.requireServer();
    String table = PostgresTestSupport.tableName();
    try (Proxy proxy = Proxy.toTestServer()) {
      PostgresUnpooledDataSource ds = proxy.dataSource();
      try (JdbcRateLimiter plain = JdbcRateLimiter.builder(p, ds).table(table).timeout(Duration.ofSeconds(5)).build();
           JdbcRateLimiter tenant = JdbcRateLimiter.builder(p, ds).table(table).tenant(() -> "acme")
               .timeout(Duration.ofSeconds(5)).build()) {
        plain.applySchema();
        long[] trips = new long[2];
        JdbcRateLimiter[] modes = {plain, tenant};
        for (int m = 0; m < 2; m++) {
          long z0 = proxy.readyForQuery.get();
          long c0 = ds.opened.get();
          calls.on(modes[m]);
          trips[m] = roundTrips(proxy, ds, z0, c0);
        }
        return trips;
      }
    } finally {
      PostgresTestSupport.drop(PostgresTestSupport.URL, table);
    }
  }

  /**
   * Issue 19: a settlement is one round trip, as an acquire, counted on the wire the same way: the
   * unused part given back (the refund statement), an overrun charged (its upsert); a settlement
   * that equals its reservation needs none.
   */
  @Test
  void aSettlementIsOneRoundTripLikeAnAcquire() throws Exception {
    PostgresTestSupport.requireServer();
    String table = PostgresTestSupport.tableName();
    try (Proxy proxy = Proxy.toTestServer()) {
      PostgresUnpooledDataSource ds = proxy.dataSource();
      Policy p = Policy.slidingWindow(PostgresTestSupport.name("settle-trips"), 100, Duration.ofMinutes(10));
      try (JdbcRateLimiter l = JdbcRateLimiter.builder(p, ds).table(table).timeout(Duration.ofSeconds(5)).build()) {
        l.applySchema();
        long[] trips = new long[5];
        long z0 = proxy.readyForQuery.get();
        long c0 = ds.opened.get();
        dev.sluice.Ticket big = l.tryAcquire("tenant:1", 40).ticket().orElseThrow();
        trips[0] = roundTrips(proxy, ds, z0, c0);
        assertThat(l.settle(big, 10)).isEqualTo(dev.sluice.Settlement.APPLIED);
        trips[1] = roundTrips(proxy, ds, z0, c0);
        dev.sluice.Ticket small = l.tryAcquire("tenant:1", 5).ticket().orElseThrow();
        trips[2] = roundTrips(proxy, ds, z0, c0);
        assertThat(l.settle(small, 50)).isEqualTo(dev.sluice.Settlement.APPLIED);
        trips[3] = roundTrips(proxy, ds, z0, c0);
        dev.sluice.Ticket exact = l.tryAcquire("tenant:1", 1).ticket().orElseThrow();
        assertThat(l.settle(exact, 1)).isEqualTo(dev.sluice.Settlement.NO_EFFECT);
        trips[4] = roundTrips(proxy, ds, z0, c0);
        System.err.printf("[round trips] acquire, settle under, acquire, settle over, acquire + exact settle: %s%n",
            java.util.Arrays.toString(trips));
        assertThat(trips).containsExactly(1, 2, 3, 4, 5);
        assertThat(l.peek("tenant:1").remaining()).isEqualTo(100 - 10 - 50 - 1);
      }
    } finally {
      PostgresTestSupport.drop(PostgresTestSupport.URL, table);
    }
  }

  private static long roundTrips(Proxy proxy, PostgresUnpooledDataSource ds, long z0, long c0) {
    return proxy.readyForQuery.get() - z0 - (ds.opened.get() - c0); // minus one per connection start-up
  }

  /** A TCP proxy that parses the server's messages and counts ReadyForQuery ('Z'). */
  static final class Proxy implements AutoCloseable {
    final AtomicLong readyForQuery = new AtomicLong();
    private final ServerSocket server;
    private final String host;
    private final int targetPort;
    private String path;

    Proxy(String host, int targetPort) throws IOException {
      this.host = host;
      this.targetPort = targetPort;
      this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
      Thread t = new Thread(this::acceptLoop, "round-trip-proxy");
      t.setDaemon(true);
      t.start();
    }

    int port() {
      return server.getLocalPort();
    }

    /** A proxy to the test server (SLUICE_POSTGRES_URL). */
    static Proxy toTestServer() throws IOException {
      URI target = URI.create(PostgresTestSupport.URL.substring("jdbc:".length()));
      Proxy p = new Proxy(target.getHost(), target.getPort());
      p.path = target.getPath();
      return p;
    }

    /** A new connection through this proxy per {@code getConnection()}. */
    PostgresUnpooledDataSource dataSource() {
      return new PostgresUnpooledDataSource("jdbc:postgresql://127.0.0.1:" + port() + path
          + "?user=postgres&sslmode=disable&assumeMinServerVersion=15");
    }

    private void acceptLoop() {
      while (!server.isClosed()) {
        try {
          Socket client = server.accept();
          Socket upstream = new Socket(host, targetPort);
          pump(client.getInputStream(), upstream.getOutputStream(), client, upstream);
          Thread back = new Thread(() -> countServerMessages(upstream, client), "round-trip-proxy-back");
          back.setDaemon(true);
          back.start();
        } catch (IOException e) {
          return;
        }
      }
    }

    private static void pump(InputStream in, OutputStream out, Socket a, Socket b) {
      Thread t = new Thread(() -> {
        byte[] buf = new byte[8192];
        try {
          for (int n; (n = in.read(buf)) >= 0; ) {
            out.write(buf, 0, n);
            out.flush();
          }
        } catch (IOException ignored) {
          // connection closed
        } finally {
          closeQuietly(a);
          closeQuietly(b);
        }
      }, "round-trip-proxy-forth");
      t.setDaemon(true);
      t.start();
    }

    /** Server-to-client: every message after startup is type byte + int32 length + body. */
    private void countServerMessages(Socket upstream, Socket client) {
      try (DataInputStream in = new DataInputStream(upstream.getInputStream())) {
        OutputStream out = client.getOutputStream();
        while (true) {
          int type = in.read();
          if (type < 0) {
            return;
          }
          int len = in.readInt();
          byte[] body = new byte[len - 4];
          in.readFully(body);
          if (type == 'Z') {
            readyForQuery.incrementAndGet(); // counted before the client can see it
          }
          out.write(type);
          out.write(new byte[] {(byte) (len >>> 24), (byte) (len >>> 16), (byte) (len >>> 8), (byte) len});
          out.write(body);
          out.flush();
        }
      } catch (IOException ignored) {
        // connection closed
      } finally {
        closeQuietly(upstream);
        closeQuietly(client);
      }
    }

    private static void closeQuietly(Socket s) {
      try {
        s.close();
      } catch (IOException ignored) {
        // already closed
      }
    }

    @Override public void close() throws IOException {
      server.close();
    }
  }
}
