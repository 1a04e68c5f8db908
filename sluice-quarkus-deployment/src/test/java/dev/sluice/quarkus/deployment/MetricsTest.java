package dev.sluice.quarkus.deployment;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.RateLimitListener;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.test.QuarkusUnitTest;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * With {@code quarkus-micrometer} (here its Prometheus registry) and {@code sluice-micrometer} on the
 * class path, the extension binds Sluice's meters itself, under the Spring starter's names: a rule's
 * decisions, its refusal and a refund show on {@code /q/metrics}, over a real port, and the
 * application's own listener is still told.
 */
class MetricsTest {
  static final int LIMIT = 2;

  @RegisterExtension
  static final QuarkusUnitTest APP = new QuarkusUnitTest()
      .withApplicationRoot(jar -> jar.addClasses(Hello.class, Refusals.class))
      .overrideConfigKey("quarkus.http.test-port", "0")
      .overrideConfigKey("sluice.policies[0].name", "metered")
      .overrideConfigKey("sluice.policies[0].algorithm", "fixed-window")
      .overrideConfigKey("sluice.policies[0].limit", String.valueOf(LIMIT))
      .overrideConfigKey("sluice.policies[0].window", "1h")
      .overrideConfigKey("sluice.http.rules[0].patterns", "/metered/**")
      .overrideConfigKey("sluice.http.rules[0].policy", "metered")
      .overrideConfigKey("sluice.http.rules[0].key", "header:X-Client")
      .overrideConfigKey("sluice.http.rules[0].skip-on-failure", "true");

  @Path("/metered")
  public static class Hello {
    @GET
    public String hello() {
      return "hello";
    }

    @GET
    @Path("/boom")
    public String boom() {
      throw new IllegalStateException("boom");
    }
  }

  /** The application's own listener, told alongside the meters. */
  @Singleton
  public static class Refusals implements RateLimitListener {
    final AtomicInteger count = new AtomicInteger();

    @Override public void onRefusal(Decision decision, String key) {
      count.incrementAndGet();
    }
  }

  @Inject
  Refusals refusals;

  @Inject
  MeterRegistry registry;

  @Test
  void theMetersAreBoundAndScrapedUnderTheStartersNames() {
    String client = "c-" + UUID.randomUUID();
    given().header("X-Client", client).get("/metered/boom").then().statusCode(500); // refunded
    for (int i = 0; i < LIMIT; i++) {
      given().header("X-Client", client).get("/metered").then().statusCode(200);
    }
    given().header("X-Client", client).get("/metered").then().statusCode(429);
    assertThat(refusals.count.get()).isEqualTo(1);

    // A refund runs when the response has ended: poll the registry for it.
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (registry.find("sluice.refunds").tag("policy", "metered").counter() == null
        || registry.find("sluice.refunds").tag("policy", "metered").counter().count() < 1) {
      assertThat(System.nanoTime()).as("no sluice.refunds counted").isLessThan(deadline);
      Thread.yield();
    }
    assertThat(registry.get("sluice.decisions").tags("policy", "metered", "outcome", "allowed").counter().count())
        .isEqualTo(LIMIT + 1);
    assertThat(registry.get("sluice.decisions").tags("policy", "metered", "outcome", "refused").counter().count())
        .isEqualTo(1);

    String scraped = given().get("/q/metrics").then().statusCode(200).extract().asString();
    assertThat(scraped).contains("sluice_decisions_total{", "policy=\"metered\"", "outcome=\"refused\"",
        "sluice_refunds_total{", "sluice_keys_tracked{");
  }
}
