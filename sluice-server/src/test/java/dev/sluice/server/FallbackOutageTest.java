package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.kernel.Store;
import dev.sluice.tck.FaultProxy;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --failure-mode fallback}: while the store cannot answer, each instance decides with a memory
 * limiter of the same policy (the rule of {@code FailureModeWords}, the Spring starter's too). The
 * outages are an unreachable port and a proxy to the shared Redis that is cut; the shared servers
 * are never stopped.
 */
class FallbackOutageTest {
  @TempDir Path dir;

  final String suffix = Long.toString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE, 36);

  @Test void theServiceTakesFallbackAndDecidesFromItWhileTheStoreIsUnreachable() throws Exception {
    Path config = dir.resolve("policies.yaml");
    Files.writeString(config, ServerApiTest.POLICIES); // login: 3 a minute
    try (ServeProcess p = ServeProcess.start(dir, "--config", config.toString(), "--port", "0", "--redis", StoreSwitchTest.NOWHERE_REDIS,
        "--store-timeout", "200ms", "--failure-mode", "FALLBACK")) {
      assertThat(p.lines()).anyMatch(l -> l.contains("decisions follow --failure-mode FALLBACK until it does"));
      Http http = new Http(p.base);
      for (int i = 0; i < 3; i++) {
        HttpResponse<String> r = http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"alice\"}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        JsonNode body = ServerApiTest.json(r);
        assertThat(body.get("path").textValue()).isEqualTo("fallback");
        assertThat(body.get("remaining").asLong()).isEqualTo(2 - i);
        assertThat(body.has("ticket")).as("a fallback's charge cannot be named by a signed ticket").isFalse();
      }
      HttpResponse<String> over = http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"alice\"}");
      assertThat(over.statusCode()).as("limited, per instance, while the store is down").isEqualTo(429);
      assertThat(ServerApiTest.json(over).get("path").textValue()).isEqualTo("fallback");
      assertThat(ServerApiTest.header(over, "Retry-After")).isNotNull();
      HttpResponse<String> peek = http.get("/v1/peek?policy=login&key=alice");
      assertThat(ServerApiTest.json(peek).get("path").textValue()).isEqualTo("fallback");
      assertThat(ServerApiTest.json(peek).get("allowed").booleanValue()).isFalse();
      assertThat(http.get("/readyz").statusCode()).as("the store is still down").isEqualTo(503);
    }
  }

  @Test void anUnreachablePostgresIsDecidedByTheFallbackToo() throws Exception {
    Store down = Store.postgres(StoreSwitchTest.NOWHERE_POSTGRES, "sluice_server_nowhere", StoreSwitchTest.mode("fallback"),
        Duration.ofMillis(300), Duration.ofMinutes(1));
    try (SluiceServer s = new SluiceServer(PolicyFile.parse(ServerApiTest.POLICIES, "test"), down, "127.0.0.1", 0,
        Duration.ofSeconds(2), dev.sluice.Ticker.system(), 1000).start()) {
      Http h = new Http(s.uri());
      for (int i = 0; i < 3; i++) {
        HttpResponse<String> r = h.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"bob\"}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(ServerApiTest.json(r).get("path").textValue()).isEqualTo("fallback");
      }
      assertThat(h.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"bob\"}").statusCode()).isEqualTo(429);
    }
  }

  /** The store answers, then its connection is cut: the next decisions come from this instance's fallback. */
  @Test void aRedisOutageMidwayIsDecidedByTheFallback() throws Exception {
    URI redis = URI.create(StoreSwitchTest.REDIS);
    int port = redis.getPort() < 0 ? 6379 : redis.getPort();
    StoreSwitchTest.reachable("Redis", redis.getHost(), port);
    String login = "login-" + suffix;
    List<dev.sluice.Policy> policies = PolicyFile.parse("""
        policies:
          - name: %s
            algorithm: fixed-window
            limit: 3
            window: 1m
        """.formatted(login), "test");
    try (FaultProxy proxy = FaultProxy.toLoopback(port);
         SluiceServer s = new SluiceServer(policies, Store.redis("redis://127.0.0.1:" + proxy.port(), StoreSwitchTest.mode("fallback"),
             Duration.ofMillis(300)), "127.0.0.1", 0, Duration.ofSeconds(2), dev.sluice.Ticker.system(), 1000).start()) {
      Http h = new Http(s.uri());
      // The limiter connects in the background; until it has, decisions are the fallback's.
      String warm = "{\"policy\":\"" + login + "\",\"key\":\"warm-up\"}";
      ServerApiTest.awaitTrue(() -> !ServerApiTest.json(h.post("/v1/acquire", warm)).has("path"));
      String acquire = "{\"policy\":\"" + login + "\",\"key\":\"carol\"}";
      HttpResponse<String> fromRedis = h.post("/v1/acquire", acquire);
      assertThat(ServerApiTest.json(fromRedis).has("path")).as("the primary path: %s", fromRedis.body()).isFalse();
      assertThat(ServerApiTest.json(fromRedis).has("ticket")).isTrue();

      proxy.refuse(); // a partition: every connection closed, new ones refused
      proxy.closeAll();
      for (int i = 0; i < 3; i++) {
        HttpResponse<String> r = h.post("/v1/acquire", acquire);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(ServerApiTest.json(r).get("path").textValue()).isEqualTo("fallback");
        assertThat(ServerApiTest.json(r).has("ticket")).isFalse();
      }
      HttpResponse<String> over = h.post("/v1/acquire", acquire);
      assertThat(over.statusCode()).as("the fallback counts from its own start: 3 more, then refused").isEqualTo(429);
      assertThat(ServerApiTest.json(over).get("path").textValue()).isEqualTo("fallback");
    }
  }
}
