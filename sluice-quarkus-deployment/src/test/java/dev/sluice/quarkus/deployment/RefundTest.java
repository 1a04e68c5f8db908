package dev.sluice.quarkus.deployment;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.guard.RateLimitExceededException;
import dev.sluice.http.HttpRateLimit;
import dev.sluice.kernel.Keys;
import dev.sluice.quarkus.RateLimited;
import dev.sluice.quarkus.Sluice;
import io.quarkus.test.QuarkusUnitTest;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.core.Response;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Refunds after the response, on a real port (memory store): a rule's {@code skip-on-failure} gives a
 * 5xx or a failed handler its permit back, {@code skip-on-success} an answer below 400, as the
 * kernel's {@code RefundRule} says; a {@code @RateLimited(skipOnFailure = true)} call that throws (or
 * whose {@code Uni} / stage fails) is refunded, one without the option stays charged.
 */
class RefundTest {
  static final int LIMIT = 2;

  @RegisterExtension
  static final QuarkusUnitTest APP = new QuarkusUnitTest()
      .withApplicationRoot(jar -> jar.addClasses(Pages.class, Work.class))
      .overrideConfigKey("quarkus.http.test-port", "0")
      .overrideConfigKey("sluice.policies[0].name", "pages")
      .overrideConfigKey("sluice.policies[0].algorithm", "fixed-window")
      .overrideConfigKey("sluice.policies[0].limit", String.valueOf(LIMIT))
      .overrideConfigKey("sluice.policies[0].window", "1h")
      .overrideConfigKey("sluice.policies[1].name", "login")
      .overrideConfigKey("sluice.policies[1].algorithm", "fixed-window")
      .overrideConfigKey("sluice.policies[1].limit", String.valueOf(LIMIT))
      .overrideConfigKey("sluice.policies[1].window", "1h")
      .overrideConfigKey("sluice.policies[2].name", "work")
      .overrideConfigKey("sluice.policies[2].algorithm", "fixed-window")
      .overrideConfigKey("sluice.policies[2].limit", "1")
      .overrideConfigKey("sluice.policies[2].window", "1h")
      .overrideConfigKey("sluice.http.rules[0].patterns", "/pages/**")
      .overrideConfigKey("sluice.http.rules[0].policy", "pages")
      .overrideConfigKey("sluice.http.rules[0].key", "header:X-Client")
      .overrideConfigKey("sluice.http.rules[0].skip-on-failure", "true")
      .overrideConfigKey("sluice.http.rules[1].patterns", "/login/**")
      .overrideConfigKey("sluice.http.rules[1].policy", "login")
      .overrideConfigKey("sluice.http.rules[1].key", "header:X-Client")
      .overrideConfigKey("sluice.http.rules[1].skip-on-success", "true");

  @Inject
  Sluice sluice;

  @Inject
  Work work;

  @Path("/")
  public static class Pages {
    @GET
    @Path("pages/ok")
    public String ok() {
      return "ok";
    }

    @GET
    @Path("pages/boom")
    public String boom() {
      throw new IllegalStateException("boom");
    }

    @GET
    @Path("pages/unavailable")
    public Response unavailable() {
      return Response.status(503).entity("down").build();
    }

    @GET
    @Path("pages/missing")
    public Response missing() {
      return Response.status(404).entity("no").build();
    }

    @GET
    @Path("login/ok")
    public String loggedIn() {
      return "welcome";
    }

    @GET
    @Path("login/denied")
    public Response denied() {
      return Response.status(401).entity("no").build();
    }
  }

  @ApplicationScoped
  public static class Work {
    @RateLimited(policy = "work", key = "#job", skipOnFailure = true)
    public String failing(String job) {
      throw new IllegalStateException("failed " + job);
    }

    @RateLimited(policy = "work", key = "#job", skipOnFailure = true)
    public Uni<String> failingUni(String job) {
      return Uni.createFrom().failure(new IllegalStateException("failed " + job));
    }

    @RateLimited(policy = "work", key = "#job", skipOnFailure = true)
    public CompletionStage<String> failingStage(String job) {
      return CompletableFuture.failedFuture(new IllegalStateException("failed " + job));
    }

    @RateLimited(policy = "work", key = "#job")
    public String failingKept(String job) {
      throw new IllegalStateException("failed " + job);
    }
  }

  /** What {@code policy} has left for {@code key}, without charging it. */
  private LongSupplier remaining(String policy, String key) {
    return () -> sluice.limiter(policy).peek(key).remaining();
  }

  /** Polls until {@code value} is {@code want}: the refund runs when the response has ended, after the client may have read it. */
  private static void awaitValue(LongSupplier value, long want) {
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    while (value.getAsLong() != want) {
      assertThat(System.nanoTime()).as("still %s, want %s", value.getAsLong(), want).isLessThan(deadline);
      Thread.onSpinWait();
      Thread.yield();
    }
  }

  private static String header(String client) {
    return HttpRateLimit.normalize(Keys.header("X-Client", client));
  }

  @Test
  void skipOnFailureRefundsA5xxAndAFailedHandlerButNotA4xxOrASuccess() {
    String client = "c-" + UUID.randomUUID();
    LongSupplier left = remaining("pages", header(client));
    for (int i = 0; i < LIMIT + 2; i++) { // each one refunded: never refused
      given().header("X-Client", client).get("/pages/boom").then().statusCode(500);
      awaitValue(left, LIMIT);
      given().header("X-Client", client).get("/pages/unavailable").then().statusCode(503);
      awaitValue(left, LIMIT);
    }
    given().header("X-Client", client).get("/pages/missing").then().statusCode(404); // a 4xx counts
    awaitValue(left, LIMIT - 1);
    given().header("X-Client", client).get("/pages/ok").then().statusCode(200); // a success counts
    assertThat(left.getAsLong()).isZero();
    given().header("X-Client", client).get("/pages/ok").then().statusCode(429);
  }

  @Test
  void skipOnSuccessRefundsAnAnswerBelow400SoOnlyFailuresCount() {
    String client = "c-" + UUID.randomUUID();
    LongSupplier left = remaining("login", header(client));
    for (int i = 0; i < LIMIT + 2; i++) {
      given().header("X-Client", client).get("/login/ok").then().statusCode(200);
      awaitValue(left, LIMIT);
    }
    for (int i = 1; i <= LIMIT; i++) {
      given().header("X-Client", client).get("/login/denied").then().statusCode(401);
      awaitValue(left, LIMIT - i);
    }
    given().header("X-Client", client).get("/login/ok").then().statusCode(429)
        .header("X-RateLimit-Remaining", "0");
  }

  @Test
  void aRateLimitedCallThatFailsIsRefundedUnderSkipOnFailure() {
    String job = "j-" + UUID.randomUUID();
    LongSupplier left = remaining("work", HttpRateLimit.normalize(Keys.key(Keys.VALUE, job)));
    for (int i = 0; i < 3; i++) { // a limit of 1, three times: each failure refunded, never a refusal
      assertThatThrownBy(() -> work.failing(job)).isInstanceOf(IllegalStateException.class);
      assertThat(left.getAsLong()).isEqualTo(1);
      assertThatThrownBy(() -> work.failingUni(job).await().atMost(Duration.ofSeconds(10)))
          .isInstanceOf(IllegalStateException.class);
      assertThat(left.getAsLong()).isEqualTo(1);
      assertThatThrownBy(() -> work.failingStage(job).toCompletableFuture().join())
          .isInstanceOf(CompletionException.class).hasCauseInstanceOf(IllegalStateException.class);
      assertThat(left.getAsLong()).isEqualTo(1);
    }
  }

  @Test
  void withoutSkipOnFailureAFailedCallStaysCharged() {
    String job = "k-" + UUID.randomUUID();
    assertThatThrownBy(() -> work.failingKept(job)).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> work.failingKept(job)).isInstanceOf(RateLimitExceededException.class);
  }
}
