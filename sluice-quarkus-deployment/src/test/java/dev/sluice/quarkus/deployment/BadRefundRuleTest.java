package dev.sluice.quarkus.deployment;

import static org.assertj.core.api.Assertions.assertThat;

import io.quarkus.test.QuarkusUnitTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A rule with both skip-on-success and skip-on-failure stops the application at start, naming both and the kernel's rule. */
class BadRefundRuleTest {
  @RegisterExtension
  static final QuarkusUnitTest APP = new QuarkusUnitTest()
      .overrideConfigKey("quarkus.http.test-port", "0")
      .overrideConfigKey("sluice.policies[0].name", "api")
      .overrideConfigKey("sluice.policies[0].algorithm", "fixed-window")
      .overrideConfigKey("sluice.policies[0].limit", "10")
      .overrideConfigKey("sluice.policies[0].window", "1m")
      .overrideConfigKey("sluice.http.rules[0].policy", "api")
      .overrideConfigKey("sluice.http.rules[0].skip-on-success", "true")
      .overrideConfigKey("sluice.http.rules[0].skip-on-failure", "true")
      .assertException(t -> assertThat(BadConfigurationTest.messages(t))
          .contains("sluice.http.rules[0].skip-on-success and sluice.http.rules[0].skip-on-failure: "
              + "skipFailedRequests and skipSuccessfulRequests are both set; then only 4xx answers would count: choose one"));

  @Test
  void theApplicationDoesNotStart() {
    // assertException above checks the start failure.
  }
}
