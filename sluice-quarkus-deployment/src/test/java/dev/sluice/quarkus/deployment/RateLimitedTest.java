package dev.sluice.quarkus.deployment;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.guard.RateLimitExceededException;
import dev.sluice.quarkus.RateLimited;
import io.quarkus.test.QuarkusUnitTest;
import io.restassured.response.Response;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@code @RateLimited} on CDI bean methods: sync, {@code Uni} and {@code CompletionStage}; over HTTP, the 429 verdict. */
class RateLimitedTest {
  @RegisterExtension
  static final QuarkusUnitTest APP = new QuarkusUnitTest()
      .withApplicationRoot(jar -> jar.addClasses(Greeter.class, Greetings.class))
      .overrideConfigKey("quarkus.http.test-port", "0")
      .overrideConfigKey("sluice.policies[0].name", "greet")
      .overrideConfigKey("sluice.policies[0].algorithm", "fixed-window")
      .overrideConfigKey("sluice.policies[0].limit", "2")
      .overrideConfigKey("sluice.policies[0].window", "1h");

  @ApplicationScoped
  public static class Greeter {
    @RateLimited(policy = "greet", key = "#name")
    public String hello(String name) {
      return "hello " + name;
    }

    @RateLimited(policy = "greet", key = "uni")
    public Uni<String> later() {
      return Uni.createFrom().item("later");
    }

    @RateLimited(policy = "greet", key = "stage")
    public CompletionStage<String> stage() {
      return CompletableFuture.completedFuture("stage");
    }
  }

  @Path("/greet")
  public static class Greetings {
    @Inject
    Greeter greeter;

    @GET
    @Path("/{name}")
    public String greet(@PathParam("name") String name) {
      return greeter.hello(name);
    }
  }

  @Inject
  Greeter greeter;

  @Test
  void aSyncMethodIsRefusedPastTheLimitPerKey() {
    assertThat(greeter.hello("ann")).isEqualTo("hello ann");
    assertThat(greeter.hello("ann")).isEqualTo("hello ann");
    assertThatThrownBy(() -> greeter.hello("ann")).isInstanceOf(RateLimitExceededException.class)
        .satisfies(e -> assertThat(((RateLimitExceededException) e).policyName()).isEqualTo("greet"));
    assertThat(greeter.hello("bob")).isEqualTo("hello bob"); // another key, another budget
  }

  @Test
  void aUniMethodFailsItsUniPastTheLimit() {
    assertThat(greeter.later().await().atMost(Duration.ofSeconds(5))).isEqualTo("later");
    assertThat(greeter.later().await().atMost(Duration.ofSeconds(5))).isEqualTo("later");
    Uni<String> refused = greeter.later(); // nothing is charged until it is subscribed
    assertThatThrownBy(() -> refused.await().atMost(Duration.ofSeconds(5))).isInstanceOf(RateLimitExceededException.class);
  }

  @Test
  void aCompletionStageMethodFailsItsStagePastTheLimit() throws Exception {
    assertThat(greeter.stage().toCompletableFuture().get(5, TimeUnit.SECONDS)).isEqualTo("stage");
    assertThat(greeter.stage().toCompletableFuture().get(5, TimeUnit.SECONDS)).isEqualTo("stage");
    assertThatThrownBy(() -> greeter.stage().toCompletableFuture().join()).isInstanceOf(CompletionException.class)
        .hasCauseInstanceOf(RateLimitExceededException.class);
  }

  @Test
  void overHttpTheRefusalIsThe429Verdict() {
    given().get("/greet/cy").then().statusCode(200);
    given().get("/greet/cy").then().statusCode(200);
    Response r = given().get("/greet/cy");
    assertThat(r.statusCode()).isEqualTo(429);
    assertThat(r.contentType()).startsWith("application/problem+json");
    assertThat(r.header("Retry-After")).isNotNull();
    assertThat(r.header("X-RateLimit-Limit")).isEqualTo("2");
    assertThat(r.header("X-RateLimit-Remaining")).isEqualTo("0");
    assertThat(r.body().asString()).contains("\"status\":429", "\"policy\":\"greet\"", "\"reason\":\"limit_exceeded\"");
  }
}
