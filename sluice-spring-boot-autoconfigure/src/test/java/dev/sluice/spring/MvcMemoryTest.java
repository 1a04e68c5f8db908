package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.RateLimiter;
import dev.sluice.memory.MemoryRateLimiter;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.boot.web.servlet.FilterRegistrationBean;

/**
 * A real Spring MVC application (Tomcat, random port) on the memory store, driven over HTTP: the
 * rules' 429 with its body and every header, a SpEL key, skip-on-success, {@code @RateLimited} with a
 * fallback and repeated (16 threads, no partial charge), a cost settled after the call, the Actuator endpoint, limiter beans by
 * name and the Micrometer meters. One context for the whole class; each test uses keys of its own.
 */
@SpringBootTest(classes = TestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class MvcMemoryTest {
  @LocalServerPort int port;
  @Autowired @Qualifier("api") RateLimiter api;
  @Autowired @Qualifier("pair-all") RateLimiter pairAll;
  @Autowired @Qualifier("tokens") RateLimiter tokens;
  @Autowired @Qualifier("token-calls") RateLimiter tokenCalls;
  @Autowired RateLimiterRegistry registry;
  @Autowired TestApp.Greeter greeter;
  @Autowired MeterRegistry meters;
  Client client;
  final String id = UUID.randomUUID().toString();

  @BeforeEach void client() {
    client = new Client(port);
  }

  @Test void aRuleRefusesWithTheOneVerdictsBodyAndEveryHeader() {
    for (int i = 1; i <= 3; i++) {
      HttpResponse<String> ok = client.get("/api/hello", "X-Client", id);
      assertThat(ok.statusCode()).isEqualTo(200);
      assertThat(ok.body()).isEqualTo("hello");
      assertThat(ok.headers().firstValue("RateLimit-Policy")).hasValue("\"api\";q=3;w=3600");
      assertThat(ok.headers().firstValue("RateLimit").orElseThrow()).startsWith("\"api\";r=" + (3 - i) + ";t=");
      assertThat(ok.headers().firstValue("X-RateLimit-Limit")).hasValue("3");
      assertThat(ok.headers().firstValue("X-RateLimit-Remaining")).hasValue(Integer.toString(3 - i));
      assertThat(ok.headers().firstValue("X-RateLimit-Reset")).isPresent();
      assertThat(ok.headers().firstValue("Retry-After")).isEmpty();
    }
    HttpResponse<String> refused = client.get("/api/hello", "X-Client", id);
    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(refused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
    long retry = Long.parseLong(refused.headers().firstValue("Retry-After").orElseThrow());
    assertThat(retry).isBetween(3500L, 3600L);
    assertThat(refused.headers().firstValue("RateLimit-Policy")).hasValue("\"api\";q=3;w=3600");
    assertThat(refused.headers().firstValue("RateLimit").orElseThrow()).startsWith("\"api\";r=0;t=");
    assertThat(refused.headers().firstValue("X-RateLimit-Remaining")).hasValue("0");
    JsonNode body = Client.json(refused);
    assertThat(body.get("type").asText()).isEqualTo("about:blank");
    assertThat(body.get("title").asText()).isEqualTo("Too Many Requests");
    assertThat(body.get("status").asInt()).isEqualTo(429);
    assertThat(body.get("detail").asText()).isEqualTo("Rate limit of policy 'api' exceeded; retry after " + retry + " seconds.");
    assertThat(body.get("allowed").asBoolean()).isFalse();
    assertThat(body.get("reason").asText()).isEqualTo("limit_exceeded");
    assertThat(body.get("policy").asText()).isEqualTo("api");
    assertThat(body.get("limit").asLong()).isEqualTo(3);
    assertThat(body.get("remaining").asLong()).isZero();
    assertThat(body.get("retryAfterSeconds").asLong()).isEqualTo(retry);
    assertThat(body.has("resetAt")).isTrue();
    // A path no rule matches is not charged.
    assertThat(client.get("/open", "X-Client", id).statusCode()).isEqualTo(200);
  }

  @Test void theSpelKeySeparatesClientsAndFallsBackToTheRemoteAddress() {
    String other = id + "-other";
    for (int i = 0; i < 3; i++) {
      assertThat(client.get("/api/hello", "X-Client", id).statusCode()).isEqualTo(200);
    }
    assertThat(client.get("/api/hello", "X-Client", id).statusCode()).isEqualTo(429);
    assertThat(client.get("/api/hello", "X-Client", other).statusCode()).isEqualTo(200);
    assertThat(api.peek("header:x-client:" + id).remaining()).as("the header's key, namespaced by its source").isZero();
    // Without the header the key is remoteAddress, through the trusted-proxy rule: ip:127.0.0.1, and
    // a forged X-Forwarded-For from an untrusted peer does not change it.
    long before = api.peek("ip:127.0.0.1").remaining();
    assertThat(client.get("/api/hello", "X-Forwarded-For", "203.0.113.9").statusCode()).isIn(200, 429);
    assertThat(api.peek("ip:127.0.0.1").remaining()).isEqualTo(Math.max(0, before - 1));
    assertThat(api.peek("ip:203.0.113.9").remaining()).isEqualTo(3);
  }

  @Test void skipOnSuccessCountsOnlyFailedLogins() {
    for (int i = 0; i < 5; i++) {
      assertThat(client.post("/login?ok=true", "X-Client", id).statusCode()).isEqualTo(200);
    }
    assertThat(client.post("/login?ok=false", "X-Client", id).statusCode()).isEqualTo(401);
    assertThat(client.post("/login?ok=false", "X-Client", id).statusCode()).isEqualTo(401);
    assertThat(client.post("/login?ok=true", "X-Client", id).statusCode()).isEqualTo(429);
    // GET is not in the rule's methods.
    assertThat(client.get("/login?ok=true", "X-Client", id).statusCode()).isEqualTo(405);
  }

  @Test void anAnnotationKeyedByItsArgumentRefusesWithTheProblemResponse() {
    assertThat(client.get("/greet/" + id).body()).isEqualTo("hello " + id);
    assertThat(client.get("/greet/" + id).statusCode()).isEqualTo(200);
    HttpResponse<String> refused = client.get("/greet/" + id);
    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(refused.headers().firstValue("Retry-After")).isPresent();
    assertThat(refused.headers().firstValue("RateLimit-Policy")).hasValue("\"per-user\";q=2;w=3600");
    assertThat(refused.headers().firstValue("X-RateLimit-Remaining")).hasValue("0");
    assertThat(Client.json(refused).get("policy").asText()).isEqualTo("per-user");
    assertThat(client.get("/greet/" + id + "-2").statusCode()).isEqualTo(200);
  }

  @Test void aRefusalCallsTheFallbackMethodWithTheRefusal() {
    assertThat(client.get("/greet-or-busy/" + id).body()).isEqualTo("hello " + id);
    assertThat(client.get("/greet-or-busy/" + id).body()).isEqualTo("hello " + id);
    HttpResponse<String> r = client.get("/greet-or-busy/" + id);
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body()).matches("busy " + id + " \\(per-user, retry in \\d+ s\\)");
  }

  @Test void repeatedAnnotationsChargeBothLegsOrNeitherUnderSixteenThreads() throws Exception {
    // pair-all (50 for everyone) is the binding leg: 4 users could take 80 on pair-user. A partial
    // charge (one leg charged for a refused call) would leave pair-all with fewer than 50 runs.
    long ranBefore = greeter.bothRan();
    long allBefore = pairAll.peek("value:everyone").remaining();
    assertThat(allBefore).isEqualTo(50);
    AtomicInteger ok = new AtomicInteger();
    AtomicInteger refused = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(16);
    try {
      List<Future<?>> fs = new ArrayList<>();
      for (int t = 0; t < 16; t++) {
        String user = id + "-" + (t % 4);
        fs.add(pool.submit(() -> {
          for (int i = 0; i < 8; i++) {
            int s = client.get("/pair/" + user).statusCode();
            (s == 200 ? ok : refused).incrementAndGet();
            assertThat(s).isIn(200, 429);
          }
        }));
      }
      for (Future<?> f : fs) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(ok.get() + refused.get()).isEqualTo(128);
    long ran = greeter.bothRan() - ranBefore;
    assertThat(ran).isEqualTo(ok.get());
    RateLimiter pairUser = registry.limiter("pair-user");
    long perUserCharged = 0;
    for (int u = 0; u < 4; u++) {
      perUserCharged += 20 - pairUser.peek("value:" + id + "-" + u).remaining();
    }
    assertThat(perUserCharged).as("pair-user charges left behind").isEqualTo(ran);
    assertThat(50 - pairAll.peek("value:everyone").remaining()).as("pair-all charges left behind").isEqualTo(ran);
    // Whatever was refused under contention, the binding leg ends with exactly its 50 runs.
    String fresh = id + "-fresh";
    while (client.get("/pair/" + fresh).statusCode() == 200) {
      assertThat(greeter.bothRan() - ranBefore).isLessThanOrEqualTo(50);
    }
    assertThat(greeter.bothRan() - ranBefore).isEqualTo(50);
  }

  @Test void theActuatorEndpointListsPoliciesAndCountsAndPeeksWithoutCharging() {
    client.get("/greet/" + id);
    JsonNode all = client.json("/actuator/ratelimits");
    assertThat(all.get("store").asText()).isEqualTo("memory");
    JsonNode first = all.get("policies").get(0);
    assertThat(first.get("name").asText()).isEqualTo("api");
    assertThat(first.get("algorithm").asText()).isEqualTo("fixed-window");
    assertThat(first.get("limit").asLong()).isEqualTo(3);
    assertThat(first.get("window").asText()).isEqualTo("1h");
    JsonNode perUser = all.get("policies").get(2);
    assertThat(perUser.get("name").asText()).isEqualTo("per-user");
    assertThat(perUser.get("decisions").get("allowed").asLong()).isPositive();
    JsonNode bucket = all.get("policies").get(3);
    assertThat(bucket.get("refill-period").asText()).isEqualTo("1h");
    for (int i = 0; i < 3; i++) {
      JsonNode peek = client.json("/actuator/ratelimits/per-user/value:user:" + id);
      assertThat(peek.get("allowed").asBoolean()).isTrue();
      assertThat(peek.get("remaining").asLong()).isEqualTo(1);
      assertThat(peek.get("policy").asText()).isEqualTo("per-user");
    }
    assertThat(client.get("/actuator/ratelimits/nope/x").statusCode()).isEqualTo(400);
    // The memory store has no shared store to report on.
    assertThat(client.json("/actuator/health").path("components").has("sluice")).isFalse();
  }

  /**
   * Issue 32 (Resilience4j's ratelimiterevents): the last events of every policy, oldest first, with
   * the answer's reason and path words; one policy's alone; never a key; an unknown policy is a 400.
   */
  @Test void theEventsEndpointShowsTheLastDecisionsWithoutKeys() {
    String who = id + "-events";
    for (int i = 0; i < 4; i++) {
      client.get("/greet/" + who);
    }
    JsonNode all = client.json("/actuator/ratelimitevents").get("events");
    assertThat(all.size()).isPositive().isLessThanOrEqualTo(100);
    JsonNode api = client.json("/actuator/ratelimitevents/per-user").get("events");
    assertThat(api.size()).isPositive();
    java.util.List<String> types = new java.util.ArrayList<>();
    api.forEach(e -> {
      assertThat(e.get("policy").asText()).isEqualTo("per-user");
      assertThat(e.has("time")).isTrue();
      types.add(e.get("type").asText());
    });
    assertThat(types).contains("allowed", "refused");
    JsonNode refused = java.util.stream.StreamSupport.stream(api.spliterator(), false)
        .filter(e -> e.get("type").asText().equals("refused")).findFirst().orElseThrow();
    assertThat(refused.get("reason").asText()).isEqualTo("limit_exceeded");
    assertThat(refused.get("path").asText()).isEqualTo("primary");
    assertThat(client.get("/actuator/ratelimitevents").body()).as("keys are never shown").doesNotContain(who);
    assertThat(client.get("/actuator/ratelimitevents/nope").statusCode()).isEqualTo(400);
  }

  /**
   * Every RateLimitListener bean hears the refusals (never the key: keys are personal data, and the
   * store's limiters keep them); one bean that throws breaks neither the answer nor the others.
   */
  @Test void theApplicationsListenerBeansHearEveryRefusal(@Autowired TestApp.HeardRefusals heard) {
    String who = id + "-heard";
    long before = heard.keys.stream().filter("per-user null"::equals).count();
    int refused = 0;
    for (int i = 0; i < 4; i++) {
      if (client.get("/greet/" + who).statusCode() == 429) {
        refused++;
      }
    }
    assertThat(refused).isEqualTo(2);
    assertThat(heard.keys.stream().filter("per-user null"::equals).count() - before).isEqualTo(2);
  }

  @Test void theFilterRunsEarlyByDefault(@Autowired FilterRegistrationBean<SluiceServletFilter> sluiceServletFilter) {
    assertThat(sluiceServletFilter.getOrder()).isEqualTo(SluiceWebFilter.ORDER).isLessThan(-100);
    assertThat(sluiceServletFilter.isEnabled()).isTrue();
  }

  @Test void eachPolicysLimiterIsABeanOfItsOwnTypeByName() {
    assertThat(api).isInstanceOf(MemoryRateLimiter.class).isSameAs(registry.limiter("api"));
    assertThat(api.policy().name()).isEqualTo("api");
    assertThat(registry.limiters().keySet()).containsExactly("api", "login", "per-user", "pair-user", "pair-all", "tokens", "token-calls",
        "bulk", "load", "small", "large", "paced");
  }

  @Test void theMicrometerMetersAreBound() {
    client.get("/greet/" + id);
    assertThat(meters.find("sluice.decisions").tag("policy", "per-user").counters()).isNotEmpty();
    assertThat(meters.find("sluice.keys.tracked").tag("limiter", "per-user").gauge()).isNotNull();
  }

  /** What {@code key} has been charged in the current window of a fixed-window policy. */
  static long charged(RateLimiter limiter, String key) {
    return limiter.policy().limit() - limiter.peek(key).remaining();
  }

  @Test void aCostSettlesEveryReservationToWhatItsCallUsedUnderSixteenThreads() throws Exception {
    LongAdder used = new LongAdder();
    int ok = Apps.admitted(320, 429, () -> {
      long u = ThreadLocalRandom.current().nextLong(151); // up to half as much again as the reservation
      used.add(u);
      return "/complete/" + id + "?max=100&used=" + u;
    }, id, client);
    assertThat(ok).isEqualTo(320);
    assertThat(charged(tokens, "value:" + id)).isEqualTo(used.sum());
  }

  @Test void repeatedAnnotationsSettleTheLegWithACostAndTheOtherKeepsItsCharge() {
    // Without the composed leg forwarding its settlement, a leg settled at anything but 0 failed
    // and kept the whole reservation (200 here).
    assertThat(greeter.completeTwice(id, 100, 30).tokens()).isEqualTo(30);
    assertThat(greeter.completeTwice(id, 100, 130).tokens()).isEqualTo(130);
    assertThat(charged(tokens, "value:" + id)).isEqualTo(160);
    assertThat(charged(tokenCalls, "value:" + id)).isEqualTo(2);
  }

  @Test void aFailingCostNeverFailsTheCallAndKeepsTheReservation() {
    assertThat(greeter.completeBadCost(id, 100, 30).tokens()).isEqualTo(30);
    assertThat(greeter.completeBadCost(id, 100, 30).tokens()).isEqualTo(30);
    assertThat(charged(tokens, "value:" + id)).isEqualTo(200);
    // A cost above the policy's limit is refused by the settlement's own rule (Checks.actual): kept too.
    assertThat(greeter.complete(id + "-big", 100, 2_000_000).tokens()).isEqualTo(2_000_000);
    assertThat(charged(tokens, "value:" + id + "-big")).isEqualTo(100);
  }
}
