package dev.sluice.quarkus.deployment;

import static org.assertj.core.api.Assertions.assertThat;

import io.quarkus.test.QuarkusUnitTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A policy the kernel's parser refuses stops the application at start, with the property, the value and the entry. */
class BadConfigurationTest {
  @RegisterExtension
  static final QuarkusUnitTest APP = new QuarkusUnitTest()
      .overrideConfigKey("quarkus.http.test-port", "0")
      .overrideConfigKey("sluice.policies[0].name", "api")
      .overrideConfigKey("sluice.policies[0].algorithm", "fixed-window")
      .overrideConfigKey("sluice.policies[0].limit", "5")
      .overrideConfigKey("sluice.policies[0].window", "60")
      .assertException(t -> assertThat(messages(t))
          .contains("sluice.policies: policy #1 ('api'): 'window' is 60 without a unit"));

  static String messages(Throwable t) {
    StringBuilder b = new StringBuilder();
    for (Throwable c = t; c != null; c = c.getCause()) {
      b.append(c.getMessage()).append('\n');
    }
    return b.toString();
  }

  @Test
  void theApplicationDoesNotStart() {
    // assertException above checks the start failure; this test only has to exist.
  }
}
