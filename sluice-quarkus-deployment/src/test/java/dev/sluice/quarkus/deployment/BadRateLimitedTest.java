package dev.sluice.quarkus.deployment;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.quarkus.RateLimited;
import io.quarkus.arc.Unremovable;
import io.quarkus.test.QuarkusUnitTest;
import jakarta.enterprise.context.ApplicationScoped;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A {@code @RateLimited} naming a policy {@code sluice.policies} lacks stops the start, naming the method and the policies. */
class BadRateLimitedTest {
  @RegisterExtension
  static final QuarkusUnitTest APP = new QuarkusUnitTest()
      .withApplicationRoot(jar -> jar.addClasses(Reports.class))
      .overrideConfigKey("quarkus.http.test-port", "0")
      .overrideConfigKey("sluice.policies[0].name", "reports")
      .overrideConfigKey("sluice.policies[0].algorithm", "gcra")
      .overrideConfigKey("sluice.policies[0].rate", "10")
      .overrideConfigKey("sluice.policies[0].period", "1s")
      .overrideConfigKey("sluice.policies[0].burst", "5")
      .assertException(t -> assertThat(BadConfigurationTest.messages(t)).contains("@RateLimited on "
          + Reports.class.getName() + ".export: policy 'report' is not one of sluice.policies [reports]"));

  /** Unremovable: ArC drops a bean nothing injects, and a bean that is never created is never called. */
  @ApplicationScoped
  @Unremovable
  public static class Reports {
    @RateLimited(policy = "report")
    public String export() {
      return "csv";
    }
  }

  @Test
  void theApplicationDoesNotStart() {
    // assertException above checks the start failure.
  }
}
