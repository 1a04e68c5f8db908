package dev.sluice.quarkus.deployment;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.quarkus.Sluice;
import io.quarkus.test.QuarkusUnitTest;
import io.restassured.response.Response;
import jakarta.inject.Inject;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A well-formed {@code sluice.postgres.url} on which no database answers (a loopback port nothing
 * listens on) does not stop the start: the store opens without connecting (the service's behaviour,
 * so that a database that is down at start does not keep the application down). Each decision then
 * fails as {@code sluice.failure-mode} says, here {@code closed}: the rule answers the outage verdict,
 * 503 with {@code Retry-After} and no limit headers, and the readiness check is down, naming the store.
 */
class PostgresOutageTest {
  @RegisterExtension
  static final QuarkusUnitTest APP = new QuarkusUnitTest()
      .withApplicationRoot(jar -> jar.addClasses(Hello.class))
      .overrideConfigKey("quarkus.http.test-port", "0")
      .overrideConfigKey("sluice.store", "postgres")
      .overrideConfigKey("sluice.postgres.url", "jdbc:postgresql://127.0.0.1:1/test?user=postgres&connectTimeout=1")
      .overrideConfigKey("sluice.timeout", "500ms")
      .overrideConfigKey("sluice.failure-mode", "closed")
      .overrideConfigKey("sluice.policies[0].name", "api")
      .overrideConfigKey("sluice.policies[0].algorithm", "fixed-window")
      .overrideConfigKey("sluice.policies[0].limit", "10")
      .overrideConfigKey("sluice.policies[0].window", "1m")
      .overrideConfigKey("sluice.http.rules[0].policy", "api");

  @Inject
  Sluice sluice;

  @Path("/hello")
  public static class Hello {
    @GET
    public String hello() {
      return "hello";
    }
  }

  @Test
  void theApplicationStartsAndARuleAnswersTheOutageVerdict() {
    assertThat(sluice.store().name()).isEqualTo("postgres");
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
    assertThat(r.body().asString().replaceAll("\\s", "")).contains("\"name\":\"sluice\",\"status\":\"DOWN\"",
        "\"store\":\"postgres\"");
  }
}
