package dev.sluice.quarkus.deployment;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.micrometer.RateLimitMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.test.QuarkusUnitTest;
import jakarta.enterprise.inject.Produces;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An application with a {@link RateLimitMetrics} bean of its own (another near-limit fraction): the
 * extension binds that one instead of its own, and every decision is counted once, not twice.
 */
class OwnMetricsBeanTest {
  static final int LIMIT = 4;

  @RegisterExtension
  static final QuarkusUnitTest APP = new QuarkusUnitTest()
      .withApplicationRoot(jar -> jar.addClasses(Hello.class, Meters.class))
      .overrideConfigKey("quarkus.http.test-port", "0")
      .overrideConfigKey("sluice.policies[0].name", "own")
      .overrideConfigKey("sluice.policies[0].algorithm", "fixed-window")
      .overrideConfigKey("sluice.policies[0].limit", String.valueOf(LIMIT))
      .overrideConfigKey("sluice.policies[0].window", "1h")
      .overrideConfigKey("sluice.http.rules[0].patterns", "/own")
      .overrideConfigKey("sluice.http.rules[0].policy", "own")
      .overrideConfigKey("sluice.http.rules[0].key", "header:X-Client");

  @Path("/own")
  public static class Hello {
    @GET
    public String hello() {
      return "hello";
    }
  }

  @Singleton
  public static class Meters {
    @Produces
    @Singleton
    RateLimitMetrics metrics() {
      return RateLimitMetrics.builder().nearLimitFraction(0.5).build();
    }
  }

  @Inject
  MeterRegistry registry;

  @Test
  void theApplicationsMetersAreBoundAndCountEachDecisionOnce() {
    String client = "c-" + UUID.randomUUID();
    for (int i = 0; i < LIMIT; i++) {
      given().header("X-Client", client).get("/own").then().statusCode(200);
    }
    given().header("X-Client", client).get("/own").then().statusCode(429);
    assertThat(registry.get("sluice.decisions").tags("policy", "own", "outcome", "allowed").counter().count())
        .isEqualTo(LIMIT);
    assertThat(registry.get("sluice.decisions").tags("policy", "own", "outcome", "refused").counter().count())
        .isEqualTo(1);
    // Remaining 1 and 0 are below half the limit of 4: the application's fraction, not the default.
    assertThat(registry.get("sluice.decisions.near.limit").tags("policy", "own").counter().count()).isEqualTo(2);
  }
}
