package dev.sluice.server;

import static dev.sluice.server.envoy.EnvoyClient.d;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Ticker;
import dev.sluice.kernel.Store;
import dev.sluice.server.envoy.EnvoyClient;
import dev.sluice.server.envoy.EnvoyGrpcServer;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Envoy gRPC API through {@code sluice serve}'s wiring on each store, asked by a real client of
 * the published stubs: memory, Redis (the shared server, keys of this run only) and PostgreSQL (a
 * table of this run). A store that cannot answer maps to what Envoy expects under each failure mode.
 */
class EnvoyStoresTest {
  final String run = Long.toString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE, 36);
  static final String CONFIG = """
      domain: shop
      descriptors:
        - key: user
          rate_limit:
            unit: minute
            requests_per_unit: 2
        - key: client
          rate_limit:
            unit: minute
            requests_per_unit: 10
        - key: bucket
          rate_limit:
            unit: minute
            requests_per_unit: 60
            sluice:
              algorithm: token-bucket
              burst: 3
      """;

  @TempDir Path dir;

  /** Server, gRPC API and a client on {@code store}; the checks every store passes. */
  void exercise(Store store) throws Exception {
    Files.writeString(dir.resolve("shop.yaml"), CONFIG);
    Envoy envoy = Envoy.of(dir, 0, "ietf");
    try (SluiceServer server = new SluiceServer(PolicyFile.parse(ServerApiTest.POLICIES, "test"), store, "127.0.0.1", 0, Duration.ofSeconds(2),
        Ticker.system(), 1000).start();
         EnvoyGrpcServer grpc = envoy.start(store, server, "127.0.0.1", Duration.ofSeconds(2));
         EnvoyClient client = new EnvoyClient(grpc.port())) {
      // Two descriptors per request: the user's 2/min refuses the third request, and the client's
      // 10/min is charged only for the two that passed (the refused one was refunded).
      for (int i = 0; i < 2; i++) {
        assertThat(client.ask("shop", d("user", "u-" + run), d("client", "c-" + run)).getOverallCode()).as(store.name()).isEqualTo(Code.OK);
      }
      RateLimitResponse third = client.ask("shop", d("user", "u-" + run), d("client", "c-" + run));
      assertThat(third.getOverallCode()).as(store.name()).isEqualTo(Code.OVER_LIMIT);
      assertThat(third.getStatuses(0).getCode()).isEqualTo(Code.OVER_LIMIT);
      assertThat(third.getStatuses(0).getDurationUntilReset().getSeconds()).isBetween(0L, 60L);
      assertThat(client.ask("shop", d("client", "c-" + run)).getStatuses(0).getLimitRemaining()).as(store.name()).isEqualTo(7);
      // Token bucket with a burst of 3.
      int admitted = 0;
      for (int i = 0; i < 4; i++) {
        admitted += client.ask("shop", d("bucket", "b-" + run)).getOverallCode() == Code.OK ? 1 : 0;
      }
      assertThat(admitted).as(store.name()).isEqualTo(3);
      // Issue 27, finding 4: one request of 10,000 descriptors (8 s on Redis, the memory store's key
      // table filled) is refused before any store call, and charges nobody.
      io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest.Builder spray =
          io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest.newBuilder().setDomain("shop");
      for (int i = 0; i < 10_000; i++) {
        spray.addDescriptors(d("client", "spray-" + i + "-" + run));
      }
      assertThatThrownBy(() -> client.stub.withDeadlineAfter(10, java.util.concurrent.TimeUnit.SECONDS).shouldRateLimit(spray.build()))
          .as(store.name()).hasMessage("INVALID_ARGUMENT: the request has 10000 descriptors; at most 64 are accepted in one request");
      assertThat(client.ask("shop", d("client", "spray-0-" + run)).getStatuses(0).getLimitRemaining()).as(store.name()).isEqualTo(9);
      // The per-descriptor meters are in the service's one Prometheus output.
      assertThat(new Http(server.uri()).get("/metrics").body())
          .contains("ratelimit_service_rate_limit_over_limit_total{descriptor=\"user\",domain=\"shop\"} 1.0")
          .contains("ratelimit_service_rate_limit_total_hits_total{descriptor=\"client\",domain=\"shop\"} 5.0");
    }
  }

  @Test void memory() throws Exception {
    exercise(Store.memory(1000, Ticker.system()));
  }

  /** --failure-mode fallback with Redis unreachable: the same answers, from this instance's memory limiter (refunds included). */
  @Test void anUnreachableRedisUnderFallback() throws Exception {
    exercise(Store.redis(StoreSwitchTest.NOWHERE_REDIS, StoreSwitchTest.mode("fallback"), Duration.ofMillis(200)));
  }

  @Test void redis() throws Exception {
    StoreSwitchTest.reachable("Redis", "127.0.0.1", 6379);
    exercise(Store.redis(StoreSwitchTest.REDIS, StoreSwitchTest.mode("closed"), Duration.ofMillis(500)));
  }

  @Test void postgres() throws Exception {
    StoreSwitchTest.reachable("PostgreSQL", "127.0.0.1", 5432);
    exercise(Store.postgres(StoreSwitchTest.POSTGRES, "sluice_envoy_" + run, StoreSwitchTest.mode("closed"), Duration.ofSeconds(2), Duration.ofMinutes(1)));
  }

  @Test void aStoreThatCannotAnswerIsUnavailableWhenClosedAndUnknownWhenOpen() throws Exception {
    Files.writeString(dir.resolve("shop.yaml"), CONFIG);
    Envoy envoy = Envoy.of(dir, 0, "ietf");
    Store closed = Store.redis(StoreSwitchTest.NOWHERE_REDIS, StoreSwitchTest.mode("closed"), Duration.ofMillis(200));
    try (SluiceServer server = new SluiceServer(PolicyFile.parse(ServerApiTest.POLICIES, "test"), closed, "127.0.0.1", 0, Duration.ofSeconds(2),
        Ticker.system(), 1000).start();
         EnvoyGrpcServer grpc = envoy.start(closed, server, "127.0.0.1", Duration.ofSeconds(2));
         EnvoyClient client = new EnvoyClient(grpc.port())) {
      // Envoy then applies failure_mode_deny: true refuses (500 or status_on_error), false lets the request through.
      assertThatThrownBy(() -> client.ask("shop", d("user", "u")))
          .isInstanceOfSatisfying(StatusRuntimeException.class, e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE))
          .hasMessageMatching("UNAVAILABLE: the rate-limit store could not decide \\((store_unavailable|timeout)\\) and --failure-mode refused the request");
      // A descriptor without a rule needs no store.
      assertThat(client.ask("shop", d("nothing", "x")).getOverallCode()).isEqualTo(Code.OK);
    }
    Store open = Store.redis(StoreSwitchTest.NOWHERE_REDIS, StoreSwitchTest.mode("open"), Duration.ofMillis(200));
    try (SluiceServer server = new SluiceServer(PolicyFile.parse(ServerApiTest.POLICIES, "test"), open, "127.0.0.1", 0, Duration.ofSeconds(2),
        Ticker.system(), 1000).start();
         EnvoyGrpcServer grpc = envoy.start(open, server, "127.0.0.1", Duration.ofSeconds(2));
         EnvoyClient client = new EnvoyClient(grpc.port())) {
      RateLimitResponse r = client.ask("shop", d("user", "u"));
      assertThat(r.getOverallCode()).isEqualTo(Code.OK);
      assertThat(r.getStatuses(0).getCode()).isEqualTo(Code.UNKNOWN);
      assertThat(r.getStatuses(0).hasCurrentLimit()).isFalse();
      assertThat(r.getResponseHeadersToAddList()).isEmpty();
    }
  }
}
