package dev.sluice.spring;

import static dev.sluice.spring.EventLoops.BLOCKED;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.RateLimiter;
import dev.sluice.redis.SharedRedis;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Issue 32's HTTP rule features on a real port, each on Spring MVC and WebFlux, on the memory store
 * and the shared Redis: execute and skip conditions skip exactly the requests they name, a rule with
 * no key for a request skips it under skip-when-no-key, a rule with two policies refuses all or
 * nothing, overlapping rules each charge under strategy all (and only the first under the default),
 * a refund condition gives back exactly the responses it names, and a configured refusal response
 * is byte for byte what the configuration says. The rules are application.yaml's {@code /feature/*}.
 */
class HttpRuleFeaturesTest {
  @Test void springMvcOnMemory() throws Exception {
    run(false, false);
  }

  @Test void webFluxOnMemory() throws Exception {
    run(true, false);
  }

  @Test void springMvcOnRedis() throws Exception {
    SharedRedis.client();
    run(false, true);
  }

  @Test void webFluxOnRedis() throws Exception {
    SharedRedis.client();
    run(true, true);
  }

  private static void run(boolean reactive, boolean redis) throws Exception {
    if (reactive) {
      EventLoops.watch();
    }
    List<String> props = new ArrayList<>();
    if (reactive) {
      props.add("spring.main.web-application-type=reactive");
    }
    if (redis) {
      props.addAll(Arrays.asList(RedisStoreTest.redis()));
    }
    List<String> all = new ArrayList<>(props);
    all.add("sluice.http.strategy=all");
    all.add("sluice.http.response.body=busy");
    all.add("sluice.http.response.headers.X-Global=yes");
    try (ConfigurableApplicationContext first = Apps.start(props.toArray(new String[0]));
         ConfigurableApplicationContext every = Apps.start(all.toArray(new String[0]))) {
      Client c = Apps.client(first);
      c.warmUp("/open");
      Client ca = Apps.client(every);
      ca.warmUp("/open");
      BLOCKED.clear();
      conditionsSkipExactlyTheRequestsTheyName(first, c);
      aRequestWithoutAKeyIsSkippedUnderSkipWhenNoKey(first, c);
      twoPoliciesOnOneRuleRefuseAllOrNothing(first, c);
      overlappingRulesEachChargeUnderStrategyAll(first, c, every, ca);
      aRefundConditionGivesBackExactlyTheResponsesItNames(first, c);
      aConfiguredRefusalIsByteForByteTheConfiguration(c);
      theGlobalResponseAppliesToEveryRuleWithoutItsOwn(ca);
      if (reactive) {
        assertThat(BLOCKED).isEmpty();
      }
    }
  }

  static String id() {
    return UUID.randomUUID().toString();
  }

  static long remaining(ConfigurableApplicationContext app, String policy, String client) {
    RateLimiter l = app.getBean(RateLimiterRegistry.class).limiter(policy);
    return l.peek("header:x-client:" + client).remaining();
  }

  /** A charged answer carries the limit headers; an uncharged one none. */
  static boolean charged(HttpResponse<String> r) {
    return r.headers().firstValue("X-RateLimit-Remaining").isPresent();
  }

  static void conditionsSkipExactlyTheRequestsTheyName(ConfigurableApplicationContext app, Client c) {
    String id = id();
    for (int i = 0; i < 5; i++) {
      // No X-Tier: the execute condition is false. X-Tier free with bypass=yes, or HEAD: the skip condition holds.
      HttpResponse<String> paid = c.get("/feature/cond", "X-Client", id, "X-Tier", "paid");
      HttpResponse<String> none = c.get("/feature/cond", "X-Client", id);
      HttpResponse<String> bypass = c.get("/feature/cond?bypass=yes", "X-Client", id, "X-Tier", "free");
      for (HttpResponse<String> r : List.of(paid, none, bypass)) {
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(charged(r)).as("%s charged", r.request()).isFalse();
      }
    }
    assertThat(remaining(app, "small", id)).isEqualTo(2);
    HttpResponse<String> a = c.get("/feature/cond?bypass=no", "X-Client", id, "X-Tier", "free");
    assertThat(a.statusCode()).isEqualTo(200);
    assertThat(a.headers().firstValue("X-RateLimit-Remaining")).hasValue("1");
    assertThat(c.get("/feature/cond", "X-Client", id, "X-Tier", "free").statusCode()).isEqualTo(200);
    assertThat(c.get("/feature/cond", "X-Client", id, "X-Tier", "free").statusCode()).isEqualTo(429);
    assertThat(c.get("/feature/cond?bypass=yes", "X-Client", id, "X-Tier", "free").statusCode()).isEqualTo(200);
    assertThat(c.get("/feature/cond", "X-Client", id).statusCode()).isEqualTo(200);
  }

  static void aRequestWithoutAKeyIsSkippedUnderSkipWhenNoKey(ConfigurableApplicationContext app, Client c) {
    for (int i = 0; i < 6; i++) {
      HttpResponse<String> r = c.get("/feature/nokey", "X-Other", "x");
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(charged(r)).isFalse();
    }
    assertThat(app.getBean(RateLimiterRegistry.class).limiter("small").peek("unknown").remaining()).isEqualTo(2);
    String id = id();
    assertThat(c.get("/feature/nokey", "X-Client", id).statusCode()).isEqualTo(200);
    assertThat(c.get("/feature/nokey", "X-Client", id).statusCode()).isEqualTo(200);
    assertThat(c.get("/feature/nokey", "X-Client", id).statusCode()).isEqualTo(429);
  }

  static void twoPoliciesOnOneRuleRefuseAllOrNothing(ConfigurableApplicationContext app, Client c) {
    // small (2) refuses first: large (3) is charged for the two admissions only.
    String id = id();
    assertThat(c.get("/feature/two", "X-Client", id).statusCode()).isEqualTo(200);
    assertThat(c.get("/feature/two", "X-Client", id).statusCode()).isEqualTo(200);
    for (int i = 0; i < 4; i++) {
      HttpResponse<String> r = c.get("/feature/two", "X-Client", id);
      assertThat(r.statusCode()).isEqualTo(429);
      assertThat(Client.json(r).get("policy").asText()).isEqualTo("small");
    }
    assertThat(remaining(app, "small", id)).isZero();
    assertThat(remaining(app, "large", id)).isEqualTo(1);

    // large refuses (spent through another rule): small, which would allow, is left uncharged.
    String id2 = id();
    for (int i = 0; i < 3; i++) {
      assertThat(c.get("/feature/large", "X-Client", id2).statusCode()).isEqualTo(200);
    }
    for (int i = 0; i < 4; i++) {
      HttpResponse<String> r = c.get("/feature/two", "X-Client", id2);
      assertThat(r.statusCode()).isEqualTo(429);
      assertThat(Client.json(r).get("policy").asText()).isEqualTo("large");
    }
    assertThat(remaining(app, "small", id2)).isEqualTo(2);
    assertThat(remaining(app, "large", id2)).isZero();
  }

  static void overlappingRulesEachChargeUnderStrategyAll(ConfigurableApplicationContext first, Client c,
      ConfigurableApplicationContext every, Client ca) {
    // The default, strategy first: /feature/overlap/both is charged by the first rule only (large).
    String id = id();
    assertThat(c.get("/feature/overlap/both", "X-Client", id).statusCode()).isEqualTo(200);
    assertThat(remaining(first, "large", id)).isEqualTo(2);
    assertThat(remaining(first, "small", id)).isEqualTo(2);

    // Strategy all: both rules charge /feature/overlap/both, all or nothing; /feature/overlap/one only the first.
    String id2 = id();
    assertThat(ca.get("/feature/overlap/both", "X-Client", id2).statusCode()).isEqualTo(200);
    assertThat(remaining(every, "large", id2)).isEqualTo(2);
    assertThat(remaining(every, "small", id2)).isEqualTo(1);
    assertThat(ca.get("/feature/overlap/both", "X-Client", id2).statusCode()).isEqualTo(200);
    assertThat(remaining(every, "large", id2)).isEqualTo(1);
    assertThat(remaining(every, "small", id2)).isZero();
    HttpResponse<String> refused = ca.get("/feature/overlap/both", "X-Client", id2);
    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(remaining(every, "large", id2)).as("the refusal charged no rule").isEqualTo(1);
    assertThat(ca.get("/feature/overlap/one", "X-Client", id2).statusCode()).isEqualTo(200);
    assertThat(ca.get("/feature/overlap/one", "X-Client", id2).statusCode()).isEqualTo(429);
  }

  static void aRefundConditionGivesBackExactlyTheResponsesItNames(ConfigurableApplicationContext app, Client c) {
    String id = id();
    LongSupplier left = () -> remaining(app, "small", id);
    for (int i = 0; i < 5; i++) {
      assertThat(c.get("/feature/refund?status=401", "X-Client", id).statusCode()).isEqualTo(401);
      // A servlet response may reach the client before the filter's refund runs: wait for it.
      awaitRemaining(left, 2);
    }
    assertThat(c.get("/feature/refund?status=403", "X-Client", id).statusCode()).isEqualTo(403);
    assertThat(c.get("/feature/refund?status=200", "X-Client", id).statusCode()).isEqualTo(200);
    assertThat(c.get("/feature/refund?status=200", "X-Client", id).statusCode()).isEqualTo(429);
    assertThat(left.getAsLong()).isZero();
  }

  static void awaitRemaining(LongSupplier left, long want) {
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (left.getAsLong() != want) {
      assertThat(System.nanoTime()).as("remaining never became %d (is %d)", want, left.getAsLong()).isLessThan(deadline);
      Thread.onSpinWait();
    }
  }

  static void aConfiguredRefusalIsByteForByteTheConfiguration(Client c) {
    String id = id();
    assertThat(c.get("/feature/custom", "X-Client", id).statusCode()).isEqualTo(200);
    assertThat(c.get("/feature/custom", "X-Client", id).statusCode()).isEqualTo(200);
    HttpResponse<String> r = c.get("/feature/custom", "X-Client", id);
    assertThat(r.statusCode()).isEqualTo(420);
    byte[] want = "{\"error\":\"slow down\",\"see\":\"https://example.com/limits\"}".getBytes(StandardCharsets.UTF_8);
    assertThat(r.body().getBytes(StandardCharsets.UTF_8)).isEqualTo(want);
    assertThat(r.headers().firstValue("Content-Type")).hasValue("application/json");
    assertThat(r.headers().firstValue("Content-Length")).hasValue(Integer.toString(want.length));
    assertThat(r.headers().firstValue("X-Quota")).hasValue("exhausted");
    assertThat(r.headers().firstValue("Cache-Control")).hasValue("no-store");
    // The verdict's headers are still sent.
    assertThat(r.headers().firstValue("Retry-After")).isPresent();
    assertThat(r.headers().firstValue("X-RateLimit-Remaining")).hasValue("0");
  }

  static void theGlobalResponseAppliesToEveryRuleWithoutItsOwn(Client ca) {
    String id = id();
    for (int i = 0; i < 3; i++) {
      assertThat(ca.get("/api/hello", "X-Client", id).statusCode()).isEqualTo(200);
    }
    HttpResponse<String> r = ca.get("/api/hello", "X-Client", id);
    assertThat(r.statusCode()).isEqualTo(429);
    assertThat(r.body()).isEqualTo("busy");
    assertThat(r.headers().firstValue("Content-Type")).hasValue("text/plain;charset=UTF-8");
    assertThat(r.headers().firstValue("X-Global")).hasValue("yes");
    assertThat(r.headers().firstValue("Retry-After")).isPresent();
  }
}
