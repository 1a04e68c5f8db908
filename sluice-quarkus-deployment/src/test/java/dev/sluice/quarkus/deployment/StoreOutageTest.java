package dev.sluice.quarkus.deployment;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;

import io.quarkus.test.QuarkusUnitTest;
import io.restassured.response.Response;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A Redis that does not answer (nothing listens on the loopback port given) under
 * {@code sluice.failure-mode=closed}: the rule answers 503 with {@code Retry-After} and no limit
 * headers, the verdict of an outage, and the readiness check is down.
 */
class StoreOutageTest {
  @RegisterExtension
  static final QuarkusUnitTest APP = new QuarkusUnitTest()
      .withApplicationRoot(jar -> jar.addClasses(Hello.class))
      .overrideConfigKey("quarkus.http.test-port", "0")
      .overrideConfigKey("sluice.store", "redis")
      .overrideConfigKey("sluice.redis.url", "redis://127.0.0.1:1")
      .overrideConfigKey("sluice.timeout", "200ms")
      .overrideConfigKey("sluice.failure-mode", "closed")
      .overrideConfigKey("sluice.policies[0].name", "api")
      .overrideConfigKey("sluice.policies[0].algorithm", "sliding-window")
      .overrideConfigKey("sluice.policies[0].limit", "10")
      .overrideConfigKey("sluice.policies[0].window", "1m")
      .overrideConfigKey("sluice.http.rules[0].policy", "api");

  @Path("/hello")
  public static class Hello {
    @GET
    public String hello() {
      return "hello";
    }
  }

  @Test
  void aRuleAnswersTheOutageVerdict() {
    Response r = given().get("/hello");
    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(r.header("Retry-After")).isNotNull();
    assertThat(r.header("X-RateLimit-Limit")).isNull();
    assertThat(r.header("RateLimit")).isNull();
    assertThat(r.contentType()).startsWith("application/problem+json");
    assertThat(r.body().asString()).contains("\"status\":503", "\"title\":\"Service Unavailable\"", "\"policy\":\"api\"");
  }

  @Test
  void theReadinessCheckIsDown() {
    Response r = given().get("/q/health/ready");
    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(r.body().asString().replaceAll("\\s", "")).contains("\"name\":\"sluice\",\"status\":\"DOWN\"");
  }
}
