package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.Policy;
import dev.sluice.Ticker;
import dev.sluice.kernel.Store;
import dev.sluice.tck.FaultProxy;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 26, findings 2 and 3 through the service: a refund or settle whose answer was {@code failed} or
 * {@code unknown} (503) because instance A's Redis connection froze, dropped the request or lost the
 * reply, retried through instance B and then A, changes the budget exactly once, on Redis and PostgreSQL.
 * Instance A reaches the shared server through the fault kit's proxy, B directly; both sign with the
 * same ticket keys.
 */
class ServiceTicketsOnceTest {
  static final int LIMIT = 10;

  /** What happens to instance A's connection while it refunds or settles, and how it comes back. */
  enum Fault {
    /** Frozen past the 100 ms timeout, then thawed: what the freeze held reaches Redis late. */
    LATE(p -> p.freeze(), FaultProxy::thaw),
    /** Frozen past the timeout, then dropped: what the freeze held never reaches Redis. */
    LOST_REQUEST(p -> p.freeze(), p -> {
      p.closeAll();
      p.pass();
    }),
    /** The command runs and its reply is lost with the connection. */
    LOST_REPLY(FaultProxy::dropNextReply, FaultProxy::pass);

    final Consumer<FaultProxy> start;
    final Consumer<FaultProxy> end;

    Fault(Consumer<FaultProxy> start, Consumer<FaultProxy> end) {
      this.start = start;
      this.end = end;
    }
  }

  final String suffix = Long.toString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE, 36);
  final String policy = "once-" + suffix;

  List<Policy> policies() {
    return PolicyFile.parse("""
        policies:
          - name: %s
            algorithm: fixed-window
            limit: %d
            window: 1h
        """.formatted(policy, LIMIT), "test");
  }

  /** The shared stores, each with A's store through the proxy and B's straight to the server. */
  enum Backend {
    REDIS {
      @Override int port() {
        URI u = URI.create(StoreSwitchTest.REDIS);
        return u.getPort() < 0 ? 6379 : u.getPort();
      }

      @Override Store store(int port, Duration timeout, String table) {
        return Store.redis("redis://127.0.0.1:" + port, StoreSwitchTest.mode("closed"), timeout);
      }
    },
    POSTGRES {
      @Override int port() {
        URI u = URI.create(StoreSwitchTest.POSTGRES.substring("jdbc:".length()));
        return u.getPort() < 0 ? 5432 : u.getPort();
      }

      @Override Store store(int port, Duration timeout, String table) {
        URI u = URI.create(StoreSwitchTest.POSTGRES.substring("jdbc:".length()));
        return Store.postgres("jdbc:postgresql://127.0.0.1:" + port + u.getRawPath() + "?" + u.getRawQuery(), table,
            StoreSwitchTest.mode("closed"), timeout, Duration.ofMinutes(1));
      }
    };

    abstract int port();

    abstract Store store(int port, Duration timeout, String table);
  }

  static Stream<Arguments> cases() {
    return Stream.of(Backend.values()).flatMap(b -> Stream.of(Fault.values()).map(f -> Arguments.of(b, f)));
  }

  @ParameterizedTest @MethodSource("cases")
  void aRefundAnsweredUnknownOrFailedAndRetriedThroughBothInstancesAppliesOnce(Backend backend, Fault fault) throws Exception {
    twoInstances(backend, fault, (a, b, proxy) -> {
      String ticket = acquire(b, "refund", 4);
      HttpResponse<String> first = underFault(fault, proxy, () -> a.post("/v1/refund", body(ticket, null)));
      retryUntilDone(fault, a, b, ticket, null);
      assertThat(remaining(b, "refund")).as("refund first answered %s %s", first.statusCode(), first.body()).isEqualTo(LIMIT);
    });
  }

  @ParameterizedTest @MethodSource("cases")
  void aSettleAnsweredUnknownOrFailedAndRetriedThroughBothInstancesAppliesOnce(Backend backend, Fault fault) throws Exception {
    twoInstances(backend, fault, (a, b, proxy) -> {
      String under = acquire(b, "under", 5);
      HttpResponse<String> first = underFault(fault, proxy, () -> a.post("/v1/settle", body(under, 2L)));
      retryUntilDone(fault, a, b, under, 2L);
      assertThat(remaining(b, "under")).as("settle 5 -> 2 first answered %s %s", first.statusCode(), first.body())
          .isEqualTo(LIMIT - 2);

      String over = acquire(b, "over", 2);
      first = underFault(fault, proxy, () -> a.post("/v1/settle", body(over, 5L)));
      retryUntilDone(fault, a, b, over, 5L);
      assertThat(remaining(b, "over")).as("settle 2 -> 5 first answered %s %s", first.statusCode(), first.body())
          .isEqualTo(LIMIT - 5);
    });
  }

  interface Body {
    void run(Http a, Http b, FaultProxy proxy) throws Exception;
  }

  private void twoInstances(Backend backend, Fault fault, Body body) throws Exception {
    StoreSwitchTest.reachable(backend.name(), "127.0.0.1", backend.port());
    TicketKeys keys = StoreSwitchTest.sharedKeys();
    String table = "sluice_once_" + suffix;
    try (FaultProxy proxy = FaultProxy.toLoopback(backend.port());
         SluiceServer a = start(backend.store(proxy.port(), Duration.ofMillis(100), table), keys);
         SluiceServer b = start(backend.store(backend.port(), Duration.ofSeconds(1), table), keys)) {
      body.run(new Http(a.uri()), new Http(b.uri()), proxy);
    } finally {
      if (backend == Backend.POSTGRES) {
        try (Connection c = DriverManager.getConnection(StoreSwitchTest.POSTGRES); Statement s = c.createStatement()) {
          s.execute("DROP TABLE IF EXISTS " + table);
        }
      }
    }
  }

  private SluiceServer start(Store store, TicketKeys keys) throws Exception {
    return new SluiceServer(policies(), store, "127.0.0.1", 0, Duration.ofSeconds(5), Ticker.system(), 1000, keys).start();
  }

  /** Runs {@code call} under the fault, ends the fault and returns the first answer, a 503 (failed or unknown) but where noted. */
  private static HttpResponse<String> underFault(Fault fault, FaultProxy proxy, java.util.function.Supplier<HttpResponse<String>> call) {
    fault.start.accept(proxy);
    HttpResponse<String> first;
    try {
      first = call.get();
    } finally {
      fault.end.accept(proxy);
    }
    if (fault == Fault.LOST_REPLY && first.statusCode() == 200) {
      return first; // the pool's other connection lost its reply (a PostgreSQL pool has several); retries still count
    }
    assertThat(first.statusCode()).as("the fault %s made the first answer a 503: %s", fault, first.body()).isEqualTo(503);
    assertThat(ServerApiTest.json(first).get("result").textValue()).as(first.body()).isIn("failed", "unknown");
    return first;
  }

  /**
   * Retries the ticket through B, then through A once A decides again, until one answer is final (200);
   * every final answer after the first is no_effect.
   */
  private static void retryUntilDone(Fault fault, Http a, Http b, String ticket, Long actual) {
    String path = actual == null ? "/v1/refund" : "/v1/settle";
    int finals = 0;
    for (Http h : new Http[] {b, b, a, a}) {
      HttpResponse<String> r = awaitAnswer(h, path, body(ticket, actual));
      if (r.statusCode() == 200) {
        String result = ServerApiTest.json(r).get("result").textValue();
        if (finals++ > 0) {
          assertThat(result).as("retry %s after a final answer, fault %s: %s", path, fault, r.body()).isEqualTo("no_effect");
        }
      }
    }
    assertThat(finals).as("a retry got a final answer").isPositive();
  }

  /** Sends until the instance answers other than 503 (its connection is back), within 10 s. */
  private static HttpResponse<String> awaitAnswer(Http h, String path, String body) {
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    HttpResponse<String> r;
    do {
      r = h.post(path, body);
    } while (r.statusCode() == 503 && System.nanoTime() < deadline);
    return r;
  }

  private String acquire(Http h, String key, int permits) {
    HttpResponse<String> r = h.post("/v1/acquire", "{\"policy\":\"" + policy + "\",\"key\":\"" + key + "\",\"permits\":" + permits + "}");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return ServerApiTest.json(r).get("ticket").textValue();
  }

  private int remaining(Http h, String key) {
    HttpResponse<String> r = h.get("/v1/peek?policy=" + URLEncoder.encode(policy, StandardCharsets.UTF_8) + "&key=" + key);
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    JsonNode n = ServerApiTest.json(r);
    return n.get("remaining").intValue();
  }

  private static String body(String ticket, Long actual) {
    return "{\"ticket\":\"" + ticket + "\"" + (actual == null ? "" : ",\"actual\":" + actual) + "}";
  }
}
