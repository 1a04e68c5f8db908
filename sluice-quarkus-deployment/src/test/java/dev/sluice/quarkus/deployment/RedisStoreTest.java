package dev.sluice.quarkus.deployment;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.http.HttpRateLimit;
import dev.sluice.kernel.Keys;
import dev.sluice.kernel.Store;
import dev.sluice.quarkus.Sluice;
import io.quarkus.test.QuarkusUnitTest;
import io.restassured.response.Response;
import jakarta.inject.Inject;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code sluice.store=redis} on the shared Redis ({@code SLUICE_REDIS_URL}, default
 * redis://127.0.0.1:6379; skipped loudly when unreachable, failed under {@code CI=true}): the rule's
 * limit is the store's, shared with another instance charging the same policy and key on the same
 * server, and the readiness check is up.
 */
@EnabledIf("redisReachable")
class RedisStoreTest {
  static final String URL = System.getenv().getOrDefault("SLUICE_REDIS_URL", "redis://127.0.0.1:6379");
  /**
   * Other builds share the server: a policy name of this run's own, kept in a system property because
   * the class is loaded twice (by JUnit, and by the application's class loader).
   */
  static final String POLICY = (String) System.getProperties().computeIfAbsent("test.quarkus-redis-policy",
      k -> "quarkus-" + UUID.randomUUID());
  static final int LIMIT = 3;

  @RegisterExtension
  static final QuarkusUnitTest APP = new QuarkusUnitTest()
      .withApplicationRoot(jar -> jar.addClasses(Hello.class, Failing.class))
      .overrideConfigKey("quarkus.http.test-port", "0")
      .overrideConfigKey("sluice.store", "redis")
      .overrideConfigKey("sluice.redis.url", URL)
      .overrideConfigKey("sluice.timeout", "1s")
      .overrideConfigKey("sluice.policies[0].name", POLICY)
      .overrideConfigKey("sluice.policies[0].algorithm", "fixed-window")
      .overrideConfigKey("sluice.policies[0].limit", String.valueOf(LIMIT))
      .overrideConfigKey("sluice.policies[0].window", "1h")
      .overrideConfigKey("sluice.policies[1].name", POLICY + "-refunded")
      .overrideConfigKey("sluice.policies[1].algorithm", "fixed-window")
      .overrideConfigKey("sluice.policies[1].limit", String.valueOf(LIMIT))
      .overrideConfigKey("sluice.policies[1].window", "1h")
      .overrideConfigKey("sluice.http.rules[0].patterns", "/hello/**")
      .overrideConfigKey("sluice.http.rules[0].policy", POLICY)
      .overrideConfigKey("sluice.http.rules[0].key", "header:X-Client")
      .overrideConfigKey("sluice.http.rules[1].patterns", "/failing")
      .overrideConfigKey("sluice.http.rules[1].policy", POLICY + "-refunded")
      .overrideConfigKey("sluice.http.rules[1].key", "header:X-Client")
      .overrideConfigKey("sluice.http.rules[1].skip-on-failure", "true");

  @Inject
  Sluice sluice;

  @Path("/hello")
  public static class Hello {
    @GET
    public String hello() {
      return "hello";
    }
  }

  @Path("/failing")
  public static class Failing {
    @GET
    public String fail() {
      throw new IllegalStateException("failing");
    }
  }

  /** skip-on-failure on Redis: the refund is a store call on a Vert.x worker, after the response. */
  @Test
  void aFailedRequestIsRefundedOnTheSharedStore() {
    String client = "c-" + UUID.randomUUID();
    String key = HttpRateLimit.normalize(Keys.header("X-Client", client));
    RateLimiter limiter = sluice.limiter(POLICY + "-refunded");
    for (int i = 0; i < LIMIT + 2; i++) { // never refused: each failure gets its permit back
      given().header("X-Client", client).get("/failing").then().statusCode(500);
      long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
      while (limiter.peek(key).remaining() != LIMIT) {
        assertThat(System.nanoTime()).as("the refund never came").isLessThan(deadline);
        Thread.yield();
      }
    }
  }

  static boolean redisReachable() {
    URI u = URI.create(URL);
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(u.getHost(), u.getPort() < 0 ? 6379 : u.getPort()), 2000);
      return true;
    } catch (IOException e) {
      String why = "Redis at " + URL + " is not reachable (" + e + ")";
      if ("true".equals(System.getenv("CI"))) {
        throw new AssertionError(why + " and CI=true: Redis tests must run in CI");
      }
      System.err.println("!!! SKIPPING the Quarkus Redis tests: " + why + " (set SLUICE_REDIS_URL)");
      return false;
    }
  }

  @Test
  void anotherInstanceOnTheSameRedisSharesTheLimitExactly() {
    assertThat(sluice.store().name()).isEqualTo("redis");
    String client = "c-" + UUID.randomUUID();
    Policy policy = sluice.limiter(POLICY).policy();
    // "Another instance": a store of its own on the same server, charging the same policy and key.
    try (Store other = Store.redis(URL, p -> FailureMode.closed(), Duration.ofSeconds(1))) {
      RateLimiter there = other.limiter(policy, RateLimitListener.NONE);
      Decision d = there.tryAcquire(HttpRateLimit.normalize(Keys.header("X-Client", client)), LIMIT - 1, policy);
      assertThat(d.allowed()).isTrue();
    }
    given().header("X-Client", client).get("/hello").then().statusCode(200)
        .header("X-RateLimit-Remaining", "0");
    Response refused = given().header("X-Client", client).get("/hello");
    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(refused.header("Retry-After")).isNotNull();
    assertThat(refused.body().asString()).contains("\"policy\":\"" + POLICY + "\"", "\"remaining\":0");
  }

  @Test
  void theReadinessCheckAsksTheStore() {
    Response r = given().get("/q/health/ready");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body().asString().replaceAll("\\s", "")).contains("\"name\":\"sluice\",\"status\":\"UP\"",
        "\"store\":\"redis\"");
  }
}
