package dev.sluice.quarkus.deployment;

import static org.assertj.core.api.Assertions.assertThat;

import io.quarkus.test.QuarkusUnitTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A {@code sluice.postgres.url} that is not a PostgreSQL JDBC URL stops the application at start, with
 * the property, the (redacted) value and the rule, before anything connects. A well-formed URL the
 * database does not answer on is another matter: see {@link PostgresOutageTest}.
 */
class BadPostgresUrlTest {
  @RegisterExtension
  static final QuarkusUnitTest APP = new QuarkusUnitTest()
      .overrideConfigKey("quarkus.http.test-port", "0")
      .overrideConfigKey("sluice.store", "postgres")
      .overrideConfigKey("sluice.postgres.url", "postgresql://127.0.0.1:5432/test?user=postgres&password=hunter2")
      .overrideConfigKey("sluice.policies[0].name", "api")
      .overrideConfigKey("sluice.policies[0].algorithm", "fixed-window")
      .overrideConfigKey("sluice.policies[0].limit", "5")
      .overrideConfigKey("sluice.policies[0].window", "1m")
      .assertException(t -> assertThat(BadConfigurationTest.messages(t))
          .contains("sluice.postgres.url 'postgresql://127.0.0.1:5432/test?user=postgres&password=",
              "is not a PostgreSQL JDBC URL; write e.g. jdbc:postgresql://")
          .doesNotContain("hunter2"));

  @Test
  void theApplicationDoesNotStart() {
    // assertException above checks the start failure; this test only has to exist.
  }
}
