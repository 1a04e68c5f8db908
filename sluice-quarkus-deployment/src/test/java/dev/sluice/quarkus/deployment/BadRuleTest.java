package dev.sluice.quarkus.deployment;

import static org.assertj.core.api.Assertions.assertThat;

import io.quarkus.test.QuarkusUnitTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** An HTTP rule naming a policy {@code sluice.policies} lacks stops the application at start, naming the rule. */
class BadRuleTest {
  @RegisterExtension
  static final QuarkusUnitTest APP = new QuarkusUnitTest()
      .overrideConfigKey("quarkus.http.test-port", "0")
      .overrideConfigKey("sluice.policies[0].name", "api")
      .overrideConfigKey("sluice.policies[0].algorithm", "token-bucket")
      .overrideConfigKey("sluice.policies[0].capacity", "10")
      .overrideConfigKey("sluice.policies[0].refill-tokens", "1")
      .overrideConfigKey("sluice.policies[0].refill-period", "1s")
      .overrideConfigKey("sluice.http.rules[0].patterns", "/api/**")
      .overrideConfigKey("sluice.http.rules[0].policy", "apii")
      .assertException(t -> assertThat(BadConfigurationTest.messages(t))
          .contains("sluice.http.rules[0].policy: policy 'apii' is not one of sluice.policies [api]"));

  @Test
  void theApplicationDoesNotStart() {
    // assertException above checks the start failure.
  }
}
