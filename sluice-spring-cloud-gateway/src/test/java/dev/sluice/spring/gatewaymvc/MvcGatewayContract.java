package dev.sluice.spring.gatewaymvc;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * What the servlet gateway (Server MVC) does on every store: a real gateway on a real port in front of
 * a real downstream server, the routes of application.yml and two in the Java DSL. Each store's
 * subclass starts the gateway ({@link #gateway}); keys are random, so that runs sharing a Redis never meet.
 */
abstract class MvcGatewayContract extends MvcGatewayContractBase {
  /** True when the verdicts of two front ends are byte-equal (a frozen clock), else equal but for the time passed. */
  abstract boolean exactClock();

  @Test void theRefusalIsTheServletFiltersOwnForTheSameDecision() throws Exception {
    // sluice-http's RateLimitServletFilter on the same limiter, in the same Tomcat (/limited).
    String id = id();
    for (int i = 0; i < 2; i++) {
      HttpResponse<String> ok = get("/hour/x", id);
      assertThat(ok.statusCode()).isEqualTo(200);
      assertThat(ok.body()).isEqualTo("ok");
      assertThat(get("/limited", id).statusCode()).isEqualTo(200);
    }
    int before = downstream.hits.get();
    HttpResponse<String> gw = get("/hour/x", id);
    HttpResponse<String> fe = get("/limited", id);
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
    assertThat(limiter("refund").peek(id).remaining()).as("given back before the answer was written").isEqualTo(2);
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
    HttpResponse<String> ok = get("/dsl/d", id);
    assertThat(ok.statusCode()).isEqualTo(200);
    assertThat(ok.headers().firstValue("X-RateLimit-Remaining")).as("the limit headers on the downstream's answer").isPresent();
    HttpResponse<String> refused = get("/dsl/d", id);
    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(refused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
  }

  @Test void aLocalHandlersAnswerCarriesTheLimitHeadersToo() throws Exception {
    String id = id();
    HttpResponse<String> ok = get("/local/l", id);
    assertThat(ok.statusCode()).isEqualTo(200);
    assertThat(ok.body()).isEqualTo("local");
    assertThat(ok.headers().firstValue("X-RateLimit-Remaining")).hasValue("1");
    assertThat(ok.headers().firstValue("RateLimit")).hasValueSatisfying(v -> assertThat(v).contains("r=1"));
    assertThat(get("/local/l", id).statusCode()).isEqualTo(200);
    assertThat(get("/local/l", id).statusCode()).isEqualTo(429);
  }

  @Test void aSluiceHttpKeyResolverKeysADslRoute() throws Exception {
    String id = id();
    for (int i = 0; i < 2; i++) {
      assertThat(get("/dsl-header/h", id).statusCode()).isEqualTo(200);
    }
    assertThat(get("/dsl-header/h", id).statusCode()).isEqualTo(429);
    assertThat(limiter("b").peek("header:x-client:" + id).remaining()).as("the namespaced key of KeyResolver.header").isZero();
  }

  @Test void sixteenClientsAtOnceAreEachDecidedOnce() throws Exception {
    AtomicInteger next = new AtomicInteger();
    List<String> unexpected = new java.util.concurrent.CopyOnWriteArrayList<>();
    String shared = id();
    ExecutorService pool = Executors.newFixedThreadPool(16);
    try {
      List<Future<?>> fs = new ArrayList<>();
      for (int t = 0; t < 16; t++) {
        String client = id();
        fs.add(pool.submit(() -> {
          for (int i = next.getAndIncrement(); i < 320; i = next.getAndIncrement()) {
            HttpResponse<String> r = get("/wide2/w", i % 2 == 0 ? client : shared);
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
    assertThat(unexpected).isEmpty();
    assertThat(limiter("wide2").peek(shared).remaining()).as("160 requests on the shared key, each charged once")
        .isEqualTo(1_000_000 - 160);
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
