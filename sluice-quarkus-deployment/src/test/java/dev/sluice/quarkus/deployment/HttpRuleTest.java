package dev.sluice.quarkus.deployment;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.RateLimitListener;
import dev.sluice.Ticker;
import dev.sluice.http.HttpRateLimit;
import dev.sluice.http.HttpVerdict;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.kernel.Keys;
import dev.sluice.quarkus.Sluice;
import io.quarkus.test.QuarkusUnitTest;
import io.restassured.response.Response;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code sluice.http.rules} on a real port (memory store): the rule's limit passes, the next request
 * is refused with exactly the status, headers and problem body {@link HttpVerdict} renders for that
 * decision, and paths no rule matches pass uncharged.
 */
class HttpRuleTest {
  static final int LIMIT = 3;

  @RegisterExtension
  static final QuarkusUnitTest APP = new QuarkusUnitTest()
      .withApplicationRoot(jar -> jar.addClasses(Hello.class, FrozenClock.class, Refusals.class))
      .overrideConfigKey("quarkus.http.test-port", "0")
      .overrideConfigKey("sluice.policies[0].name", "api")
      .overrideConfigKey("sluice.policies[0].algorithm", "fixed-window")
      .overrideConfigKey("sluice.policies[0].limit", String.valueOf(LIMIT))
      .overrideConfigKey("sluice.policies[0].window", "1h")
      .overrideConfigKey("sluice.http.rules[0].patterns", "/hello/limited/**")
      .overrideConfigKey("sluice.http.rules[0].policy", "api")
      .overrideConfigKey("sluice.http.rules[0].key", "header:X-Client");

  @Inject
  Sluice sluice;

  /** The application's clock, frozen: the memory store decides on it and the verdicts are rendered against it. */
  @Singleton
  public static class FrozenClock implements Ticker {
    private final long now = Ticker.system().nowMicros();

    @Override public long nowMicros() {
      return now;
    }
  }

  /** The application's listener: every limiter reports to it. */
  @Singleton
  public static class Refusals implements RateLimitListener {
    final AtomicInteger count = new AtomicInteger();

    @Override public void onRefusal(Decision decision, String key) {
      count.incrementAndGet();
    }
  }

  @Inject
  Refusals refusals;

  @Path("/hello")
  public static class Hello {
    @GET
    @Path("/limited/a")
    public String limited() {
      return "hello";
    }

    @GET
    @Path("/free")
    public String free() {
      return "free";
    }
  }

  @Test
  void theRuleRefusesTheRequestPastTheLimitWithTheVerdictOfItsDecision() {
    String client = "c-" + UUID.randomUUID();
    for (int i = 1; i <= LIMIT; i++) {
      given().header("X-Client", client).get("/hello/limited/a").then().statusCode(200)
          .header("X-RateLimit-Limit", String.valueOf(LIMIT))
          .header("X-RateLimit-Remaining", String.valueOf(LIMIT - i));
    }
    int before = refusals.count.get();
    Response refused = given().header("X-Client", client).get("/hello/limited/a");
    assertThat(refusals.count.get()).isEqualTo(before + 1); // the application's listener heard the refusal
    // The clock is frozen, so a peek at the key now is the refused request's decision, field for field.
    Decision d = sluice.limiter("api").peek(HttpRateLimit.normalize(Keys.header("X-Client", client)));
    assertThat(d.allowed()).isFalse();
    HttpVerdict expected = HttpVerdict.of(d, sluice.ticker().nowMicros(), RateLimitHeaders.all());
    assertThat(refused.statusCode()).isEqualTo(429).isEqualTo(expected.status());
    assertThat(refused.contentType()).startsWith(HttpVerdict.PROBLEM_JSON);
    Map<String, String> sent = new LinkedHashMap<>();
    Map<String, String> want = new LinkedHashMap<>();
    for (HttpVerdict.Header h : expected.headers()) {
      sent.put(h.name(), refused.header(h.name()));
      want.put(h.name(), h.value());
    }
    assertThat(want).containsKeys("Retry-After", "RateLimit-Policy", "RateLimit", "X-RateLimit-Limit");
    assertThat(sent).isEqualTo(want);
    assertThat(refused.body().asString()).isEqualTo(expected.body());
  }

  @Test
  void pathsNoRuleMatchesPassUncharged() {
    for (int i = 0; i < LIMIT + 2; i++) {
      Response r = given().header("X-Client", "free").get("/hello/free");
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.header("X-RateLimit-Limit")).isNull();
    }
  }
}
