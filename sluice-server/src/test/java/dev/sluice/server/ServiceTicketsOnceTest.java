package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.Ticker;
import dev.sluice.tck.FaultProxy;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Consumer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Issue 26, findings 2 and 3 through the service: a refund or settle whose answer was {@code failed} or
 * {@code unknown} (503) because instance A's Redis connection froze, dropped the request or lost the
 * reply, retried through instance B and then A, changes the budget exactly once. Instance A reaches the
 * shared Redis through the fault kit's proxy, B directly; both sign with the same ticket keys.
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

  @ParameterizedTest @EnumSource(Fault.class)
  void aRefundAnsweredUnknownOrFailedAndRetriedThroughBothInstancesAppliesOnce(Fault fault) throws Exception {
    twoInstances(fault, (a, b, proxy) -> {
      String ticket = acquire(b, "refund", 4);
      HttpResponse<String> first = underFault(fault, proxy, () -> a.post("/v1/refund", body(ticket, null)));
      retryUntilDone(fault, a, b, ticket, null);
      assertThat(remaining(b, "refund")).as("refund first answered %s %s", first.statusCode(), first.body()).isEqualTo(LIMIT);
    });
  }

  @ParameterizedTest @EnumSource(Fault.class)
  void aSettleAnsweredUnknownOrFailedAndRetriedThroughBothInstancesAppliesOnce(Fault fault) throws Exception {
    twoInstances(fault, (a, b, proxy) -> {
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

  private void twoInstances(Fault fault, Body body) throws Exception {
    URI redis = URI.create(StoreSwitchTest.REDIS);
    int port = redis.getPort() < 0 ? 6379 : redis.getPort();
    StoreSwitchTest.reachable("Redis", redis.getHost(), port);
    TicketKeys keys = StoreSwitchTest.sharedKeys();
    try (FaultProxy proxy = FaultProxy.toLoopback(port);
         SluiceServer a = start(Store.redis("redis://127.0.0.1:" + proxy.port(), FailureMode.closed(), Duration.ofMillis(100)), keys);
         SluiceServer b = start(Store.redis(StoreSwitchTest.REDIS, FailureMode.closed(), Duration.ofSeconds(1)), keys)) {
      body.run(new Http(a.uri()), new Http(b.uri()), proxy);
    }
  }

  private SluiceServer start(Store store, TicketKeys keys) throws Exception {
    return new SluiceServer(policies(), store, "127.0.0.1", 0, Duration.ofSeconds(5), Ticker.system(), 1000, keys).start();
  }

  /** Runs {@code call} under the fault, ends the fault and returns the first answer, a 503 (failed or unknown). */
  private static HttpResponse<String> underFault(Fault fault, FaultProxy proxy, java.util.function.Supplier<HttpResponse<String>> call) {
    fault.start.accept(proxy);
    HttpResponse<String> first;
    try {
      first = call.get();
    } finally {
      fault.end.accept(proxy);
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
