package dev.sluice.spring.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import dev.sluice.RateLimiter;
import dev.sluice.http.HttpRateLimit;
import dev.sluice.http.KeyResolver;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.http.RateLimitHttpFilter;
import dev.sluice.spring.RateLimiterRegistry;
import java.net.InetSocketAddress;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * What the gateway does on every store: a real gateway on a real port in front of a real downstream
 * server, the routes of application.yml and one in the Java DSL. Each store's subclass starts the
 * gateway ({@link #gateway}); keys are random, so that runs sharing a Redis never meet.
 */
abstract class GatewayContract {
  static final ObjectMapper JSON = new ObjectMapper();
  /** The headers a verdict writes. */
  static final List<String> VERDICT_HEADERS = List.of("Retry-After", "RateLimit-Policy", "RateLimit", "X-RateLimit-Limit",
      "X-RateLimit-Remaining", "X-RateLimit-Reset", "Content-Type");

  static Downstream downstream;
  static ConfigurableApplicationContext app;
  static String base;

  /** Starts the gateway of this store once for the class. */
  static void gateway(Class<?>[] beans, String... properties) throws Exception {
    downstream = new Downstream();
    app = Gateways.start(downstream, beans, properties);
    base = "http://127.0.0.1:" + Gateways.port(app);
  }

  @AfterAll static void stop() {
    if (app != null) {
      app.close();
      app = null;
    }
    if (downstream != null) {
      downstream.close();
    }
  }

  /** True when the verdicts of two front ends are byte-equal (a frozen clock), else equal but for the time passed. */
  abstract boolean exactClock();

  static String id() {
    return UUID.randomUUID().toString();
  }

  static HttpResponse<String> get(String path, String client) throws Exception {
    return Gateways.get(base, path, client);
  }

  static RateLimiter limiter(String policy) {
    return app.getBean(RateLimiterRegistry.class).limiter(policy);
  }

  @Test void theRefusalIsTheOtherFrontEndsOwnForTheSameDecision() throws Exception {
    // The JDK filter of sluice-http on the same limiter, in front of its own server: the front end the
    // servlet filter and the WebFlux filter answer through too (HttpVerdict), here its real bytes.
    HttpServer jdk = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    jdk.createContext("/limited", x -> {
      x.sendResponseHeaders(200, -1);
      x.close();
    }).getFilters().add(new RateLimitHttpFilter(HttpRateLimit.builder(limiter("hour"))
        .keyResolver(KeyResolver.header("X-Client")).headers(RateLimitHeaders.all()).build()));
    jdk.start();
    try {
      String id = id();
      String other = "http://127.0.0.1:" + jdk.getAddress().getPort();
      for (int i = 0; i < 2; i++) {
        HttpResponse<String> ok = get("/hour/x", id);
        assertThat(ok.statusCode()).isEqualTo(200);
        assertThat(ok.body()).isEqualTo("ok");
        assertThat(Gateways.get(other, "/limited", id).statusCode()).isEqualTo(200);
      }
      int before = downstream.hits.get();
      HttpResponse<String> gw = get("/hour/x", id);
      HttpResponse<String> fe = Gateways.get(other, "/limited", id);
      assertThat(downstream.hits.get()).as("a refused request never reaches the downstream").isEqualTo(before);
      assertThat(gw.statusCode()).isEqualTo(429).isEqualTo(fe.statusCode());
      Map<String, String> gh = verdictHeaders(gw);
      Map<String, String> fh = verdictHeaders(fe);
      assertThat(gh.keySet()).containsExactlyElementsOf(fh.keySet()).contains("Retry-After", "RateLimit", "X-RateLimit-Remaining");
      JsonNode gb = JSON.readTree(gw.body());
      JsonNode fb = JSON.readTree(fe.body());
      if (exactClock()) {
        assertThat(gh).isEqualTo(fh);
        assertThat(gw.body()).isEqualTo(fe.body());
      } else {
        // Redis decides on its own clock: the two answers are a few milliseconds apart.
        List<String> names = new ArrayList<>();
        fb.fieldNames().forEachRemaining(names::add);
        List<String> gnames = new ArrayList<>();
        gb.fieldNames().forEachRemaining(gnames::add);
        assertThat(gnames).isEqualTo(names);
        for (String f : List.of("type", "title", "status", "allowed", "reason", "policy", "limit", "remaining")) {
          assertThat(gb.get(f)).as(f).isEqualTo(fb.get(f));
        }
        assertThat(gb.get("retryAfterSeconds").asLong()).isCloseTo(fb.get("retryAfterSeconds").asLong(), org.assertj.core.data.Offset.offset(2L));
        assertThat(gh.get("X-RateLimit-Limit")).isEqualTo(fh.get("X-RateLimit-Limit"));
        assertThat(gh.get("RateLimit-Policy")).isEqualTo(fh.get("RateLimit-Policy"));
        assertThat(gh.get("Content-Type")).isEqualTo(fh.get("Content-Type"));
      }
      assertThat(gb.get("status").asInt()).isEqualTo(429);
      assertThat(gb.get("policy").asText()).isEqualTo("hour");
    } finally {
      jdk.stop(0);
    }
  }

  @Test void aRouteWithAOneHourWindowRefusesForTheRestOfTheHour() throws Exception {
    String id = id();
    for (int i = 0; i < 2; i++) {
      HttpResponse<String> ok = get("/hour/y", id);
      assertThat(ok.statusCode()).isEqualTo(200);
      assertThat(ok.headers().firstValue("X-RateLimit-Remaining")).hasValue(Integer.toString(1 - i));
      assertThat(ok.headers().firstValue("RateLimit-Policy")).hasValueSatisfying(v -> assertThat(v).contains("w=3600"));
    }
    HttpResponse<String> refused = get("/hour/y", id);
    assertThat(refused.statusCode()).isEqualTo(429);
    long retry = Long.parseLong(refused.headers().firstValue("Retry-After").orElseThrow());
    // A sliding window weighs the previous hour too: the wait is up to two windows, never seconds.
    assertThat(retry).as("a one-hour window: back in most of an hour, not in seconds").isBetween(1800L, 7200L);
    assertThat(JSON.readTree(refused.body()).get("retryAfterSeconds").asLong()).isEqualTo(retry);
  }

  @Test void twoLimitsOnOneRouteRefuseAllOrNothing() throws Exception {
    String id = id();
    // a: 3 an hour, b: 2 an hour. Two requests charge both; the third is refused by b, and a is not charged.
    for (int i = 0; i < 2; i++) {
      assertThat(get("/both/z", id).statusCode()).isEqualTo(200);
    }
    int before = downstream.hits.get();
    HttpResponse<String> refused = get("/both/z", id);
    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(JSON.readTree(refused.body()).get("policy").asText()).isEqualTo("b");
    assertThat(get("/both/z", id).statusCode()).isEqualTo(429);
    assertThat(downstream.hits.get()).isEqualTo(before);
    assertThat(limiter("a").peek(id).remaining()).as("a was charged for the two allowed requests only").isEqualTo(1);
    assertThat(limiter("b").peek(id).remaining()).isZero();
    // The route of a alone, same key: a's last permit is there.
    assertThat(get("/a/z", id).statusCode()).isEqualTo(200);
    assertThat(get("/a/z", id).statusCode()).isEqualTo(429);
  }

  @Test void aRouteRefundsTheChargeWhenTheDownstreamAnswersAStatusItNames() throws Exception {
    String id = id();
    for (int i = 0; i < 5; i++) {
      assertThat(get("/refund/r?status=500", id).statusCode()).as("refund-on 5xx: a failed call costs nothing").isEqualTo(500);
    }
    assertThat(get("/refund/r?status=404", id).statusCode()).isEqualTo(404);
    assertThat(get("/refund/r", id).statusCode()).isEqualTo(200);
    assertThat(get("/refund/r", id).statusCode()).as("the 404 and one 200 counted").isEqualTo(429);
  }

  @Test void theJavaDslRouteTakesItsSettingsFromCode() throws Exception {
    String id = id();
    for (int i = 0; i < 3; i++) {
      assertThat(get("/dsl/d?status=404", id).statusCode()).as("refund-on 404, set in code").isEqualTo(404);
    }
    assertThat(get("/dsl/d", id).statusCode()).isEqualTo(200);
    assertThat(get("/dsl/d", id).statusCode()).isEqualTo(200);
    HttpResponse<String> refused = get("/dsl/d", id);
    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(refused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
  }

  @Test void theGatewaysRequestRateLimiterRunsOnSluice() throws Exception {
    String id = id();
    for (int i = 0; i < 2; i++) {
      HttpResponse<String> ok = get("/rrl/q", id);
      assertThat(ok.statusCode()).isEqualTo(200);
      String left = "r=" + (1 - i);
      assertThat(ok.headers().firstValue("RateLimit")).hasValueSatisfying(v -> assertThat(v).contains(left));
    }
    HttpResponse<String> refused = get("/rrl/q", id);
    assertThat(refused.statusCode()).as("the gateway's filter answers the refusal: its status, no body").isEqualTo(429);
    assertThat(refused.headers().firstValue("Retry-After")).isPresent();
    assertThat(refused.headers().firstValue("RateLimit")).hasValueSatisfying(v -> assertThat(v).contains("r=0"));
    assertThat(refused.body()).isEmpty();
    assertThat(limiter("hour").peek(id).remaining()).isZero();
  }

  @Test void theRequestRateLimiterOfAJavaDslRouteNamesItsPolicyInCode() throws Exception {
    String id = id();
    for (int i = 0; i < 2; i++) {
      assertThat(get("/dsl-rrl/q", id).statusCode()).isEqualTo(200);
    }
    HttpResponse<String> refused = get("/dsl-rrl/q", id);
    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(refused.headers().firstValue("RateLimit-Policy")).hasValueSatisfying(v -> assertThat(v).startsWith("\"b\";q=2"));
    assertThat(limiter("b").peek(id).remaining()).isZero();
  }

  @Test void sixteenClientsNeverBlockAnEventLoop() throws Exception {
    EventLoops.watch();
    int before = EventLoops.BLOCKED.size();
    for (String route : List.of("/wide/w", "/wide2/w")) {
      AtomicInteger next = new AtomicInteger();
      List<String> unexpected = new java.util.concurrent.CopyOnWriteArrayList<>();
      ExecutorService pool = Executors.newFixedThreadPool(16);
      try {
        List<Future<?>> fs = new ArrayList<>();
        for (int t = 0; t < 16; t++) {
          String client = id();
          fs.add(pool.submit(() -> {
            for (int i = next.getAndIncrement(); i < 320; i = next.getAndIncrement()) {
              HttpResponse<String> r = get(route, i % 2 == 0 ? client : "shared-" + route);
              if (r.statusCode() != 200) {
                unexpected.add(r.statusCode() + " " + r.body());
              }
            }
            return null;
          }));
        }
        for (Future<?> f : fs) {
          f.get();
        }
      } finally {
        pool.shutdownNow();
      }
      assertThat(unexpected).as(route).isEmpty();
    }
    assertThat(EventLoops.BLOCKED.subList(before, EventLoops.BLOCKED.size())).isEmpty();
  }

  /** The verdict's headers a response carries, by name. */
  static Map<String, String> verdictHeaders(HttpResponse<String> r) {
    Map<String, String> m = new TreeMap<>();
    for (String h : VERDICT_HEADERS) {
      r.headers().firstValue(h).ifPresent(v -> m.put(h, v));
    }
    return m;
  }
}
