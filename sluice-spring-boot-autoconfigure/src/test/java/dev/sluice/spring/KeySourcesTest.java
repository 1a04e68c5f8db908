package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Issue 27, finding 3, in a real Spring MVC application: a value one source of a key expression
 * offers, crafted to equal the key another source gives, never spends that key's budget. With the
 * documented key {@code header('X-Api-Key') ?: remoteAddress}, a client sending
 * {@code X-Api-Key: ip:127.0.0.1} left the client at 127.0.0.1 refused: header values were used raw
 * while addresses read {@code ip:...}. One application, policy {@code api} (3 per hour) on every
 * rule, each rule its own path; the peer 127.0.0.1 is a trusted proxy, so each case's victim has an
 * address of its own ({@code X-Forwarded-For}). {@code X-Test-User} names the principal
 * ({@code TestApp.TestAuthentication}).
 */
class KeySourcesTest {
  /** Each case: its rule's key expression, the victim's headers, the attacker's crafted ones. */
  static final Object[][] CASES = {
      {"header -> address", "header('X-Api-Key') ?: remoteAddress",
          new String[] {"X-Forwarded-For", "198.51.100.1"}, new String[] {"X-Api-Key", "ip:198.51.100.1"}},
      {"header -> principal", "header('X-Api-Key') ?: principal",
          new String[] {"X-Test-User", "alice"}, new String[] {"X-Api-Key", "alice"}},
      {"header -> other header", "header('X-Api-Key') ?: header('X-Tenant')",
          new String[] {"X-Tenant", "acme"}, new String[] {"X-Api-Key", "acme"}},
      {"header -> literal", "header('X-Api-Key') ?: 'anonymous'",
          new String[] {}, new String[] {"X-Api-Key", "anonymous"}},
      {"header -> path", "header('X-Api-Key') ?: path",
          new String[] {}, new String[] {"X-Api-Key", "/keys/4"}},
      {"header -> method", "header('X-Api-Key') ?: method",
          new String[] {}, new String[] {"X-Api-Key", "GET"}},
      {"principal -> address", "principal ?: remoteAddress",
          new String[] {"X-Forwarded-For", "198.51.100.6"}, new String[] {"X-Test-User", "ip:198.51.100.6"}},
      {"principal -> header", "principal ?: header('X-Api-Key')",
          new String[] {"X-Api-Key", "k7"}, new String[] {"X-Test-User", "k7"}},
      {"computed -> address", "@keys.lower(header('X-Tenant')) ?: remoteAddress",
          new String[] {"X-Forwarded-For", "198.51.100.8"}, new String[] {"X-Tenant", "IP:198.51.100.8"}},
      // join keeps two sources apart where a concatenation would not (KeyResolver.and's rule)
      {"joined -> joined", "join(header('X-Api-Key'), header('X-Tenant'))",
          new String[] {"X-Api-Key", "P|header:x-tenant:Q", "X-Tenant", "R"}, new String[] {"X-Api-Key", "P", "X-Tenant", "Q|header:x-tenant:R"}},
  };

  static ConfigurableApplicationContext app;
  static Client client;

  @BeforeAll static void start() {
    List<String> properties = new ArrayList<>(List.of("sluice.http.trusted-proxies=127.0.0.1/32"));
    for (int i = 0; i < CASES.length; i++) {
      properties.add("sluice.http.rules[" + i + "].patterns=/keys/" + i);
      properties.add("sluice.http.rules[" + i + "].policy=api");
      properties.add("sluice.http.rules[" + i + "].key=" + CASES[i][1]);
    }
    app = Apps.start(properties.toArray(new String[0]));
    client = Apps.client(app);
  }

  @AfterAll static void stop() {
    if (app != null) {
      app.close();
    }
  }

  static Stream<Arguments> cases() {
    List<Arguments> all = new ArrayList<>();
    for (int i = 0; i < CASES.length; i++) {
      all.add(Arguments.of(CASES[i][0], "/keys/" + i, CASES[i][2], CASES[i][3]));
    }
    return all.stream();
  }

  /** The victim spends its budget; the attacker's crafted request is answered from a budget of its own. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void aValueCraftedToEqualAnotherSourcesKeyNeverSharesItsBudget(String pair, String path, String[] victim, String[] attacker) {
    spend(path, victim);
    assertThat(client.get(path, attacker).statusCode()).as("the crafted request has a budget of its own").isEqualTo(200);
  }

  /**
   * An annotation's key is a computed value: a header passed as the argument, crafted as the
   * address key of a rule on the same policy, spends a budget of its own.
   */
  @Test void anAnnotationsKeyNeverSharesTheBudgetOfARulesSource() {
    String path = "/keys/0"; // header('X-Api-Key') ?: remoteAddress, policy api
    spend(path, "X-Forwarded-For", "198.51.100.9");
    assertThat(client.get("/annotated", "X-Api-Key", "ip:198.51.100.9").statusCode())
        .as("@RateLimited(policy = \"api\", key = \"#apiKey\") with the crafted value").isEqualTo(200);
  }

  private static void spend(String path, String... victim) {
    for (int i = 0; i < 3; i++) {
      assertThat(client.get(path, victim).statusCode()).as("the victim's request " + (i + 1)).isEqualTo(200);
    }
    assertThat(client.get(path, victim).statusCode()).as("the victim spent its budget").isEqualTo(429);
  }
}
