package dev.sluice.quarkus.deployment;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.guard.RateLimitExceededException;
import dev.sluice.http.HttpVerdict;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.kernel.Store;
import dev.sluice.quarkus.RateLimited;
import dev.sluice.testing.ManualTicker;
import io.quarkus.test.QuarkusUnitTest;
import io.restassured.response.Response;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Produces;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import jakarta.ws.rs.GET;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The extension's verdicts agree with every other front end's: {@code sluice-server}'s
 * {@code FrontEndsAgreeTest} feeds one decision for every reason, on the primary and the failure-mode
 * path, to the servlet filter, the JDK filter, the service, MCP and gRPC, and checks them against
 * {@link HttpVerdict}'s rendering; it cannot load Quarkus, so this test feeds the same cases to the
 * extension on a real port, through an HTTP rule and through {@code @RateLimited} (Quarkus REST's
 * exception mapper), and checks each answer against the same rendering: status, every header it
 * names (and no other limit header), content type and body, byte for byte.
 *
 * <p>The decisions come from an application {@link Store} bean whose limiter answers what the test
 * set (the input under test), on a frozen clock at {@code FrontEndsAgreeTest}'s instant.
 */
class VerdictAgreementTest {
  static final long T0 = 1_800_000_000_000_000L; // FrontEndsAgreeTest's 2027-01-15T08:00:00Z
  static final List<String> VERDICT_HEADERS = List.of("Retry-After", "RateLimit-Policy", "RateLimit",
      "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset");

  @RegisterExtension
  static final QuarkusUnitTest APP = new QuarkusUnitTest()
      .withApplicationRoot(jar -> jar.addClasses(App.class, FixedStore.class, Clock.class, Guarded.class))
      .overrideConfigKey("quarkus.http.test-port", "0")
      .overrideConfigKey("sluice.policies[0].name", "api")
      .overrideConfigKey("sluice.policies[0].algorithm", "fixed-window")
      .overrideConfigKey("sluice.policies[0].limit", "100")
      .overrideConfigKey("sluice.policies[0].window", "1m")
      .overrideConfigKey("sluice.http.rules[0].patterns", "/app/ok")
      .overrideConfigKey("sluice.http.rules[0].policy", "api")
      .overrideConfigKey("sluice.http.rules[0].headers", "all");

  /** A store whose one limiter answers every check with {@link #answer}. */
  @Singleton
  public static class FixedStore extends Store {
    volatile Decision answer;

    @Override public String name() { return "fixed"; }

    @Override public String describe() { return "the test's fixed answers"; }

    @Override public boolean shared() { return false; }

    @Override public RateLimiter limiter(Policy policy, RateLimitListener listener) {
      return new RateLimiter() {
        @Override public Policy policy() { return policy; }

        @Override public Decision tryAcquire(String key, long permits, Policy p) { return answer; }

        @Override public Decision peek(String key, Policy p) { return answer; }

        @Override public Refund refund(Ticket ticket) { return Refund.NO_EFFECT; }

        @Override public void reset(String key, Policy p) {}
      };
    }
  }

  /** The application's clock, frozen at T0: every verdict is rendered against it. */
  @Singleton
  public static class Clock {
    @Produces
    @Singleton
    Ticker ticker() {
      return ManualTicker.at(T0);
    }
  }

  @ApplicationScoped
  public static class Guarded {
    @RateLimited(policy = "api")
    public String call() {
      return "ok";
    }
  }

  @jakarta.ws.rs.Path("/")
  public static class App {
    @Inject
    Guarded guarded;

    @GET
    @jakarta.ws.rs.Path("app/ok")
    public String ok() {
      return "ok";
    }

    @GET
    @jakarta.ws.rs.Path("annotated")
    public String annotated() {
      return guarded.call();
    }
  }

  @Inject
  FixedStore store;

  /** FrontEndsAgreeTest's cases: built here, on the application's class loader, where the test runs. */
  static Map<String, Decision> cases() {
    Policy api = Policy.fixedWindow("api", 100, Duration.ofMinutes(1));
    Map<String, Decision> cases = new LinkedHashMap<>();
    cases.put("allowed", Decision.allowed(api, 57, T0 + 60_000_000, new Ticket.Issuer().issue(api, "k", 1, T0)));
    for (Reason r : List.of(Reason.STORE_UNAVAILABLE, Reason.TIMEOUT)) {
      cases.put("allowed " + r + " failure_mode", Decision.builder(api).allowed(r).path(Path.FAILURE_MODE).resetAtMicros(T0).build());
    }
    for (Reason r : Reason.values()) {
      if (r == Reason.WITHIN_LIMIT) {
        continue;
      }
      cases.put("refused " + r + " primary", Decision.refused(api, r, 0, T0 + 40_000_000, 39_500_001));
      cases.put("refused " + r + " failure_mode", Decision.builder(api).refused(r).path(Path.FAILURE_MODE)
          .resetAtMicros(T0 + 250).retryAfterMicros(250).build());
    }
    return cases;
  }

  /** What the issue decided, written out here rather than read back from the code under test. */
  static int expectedStatus(Decision d) {
    if (d.allowed()) {
      return 200;
    }
    return switch (d.reason()) {
      case LIMIT_EXCEEDED, KEY_TABLE_FULL, CONTENTION -> 429;
      case STORE_UNAVAILABLE, TIMEOUT, CORRUPT_STATE, INVALID_CLOCK -> 503;
      case WITHIN_LIMIT -> throw new AssertionError("not a refusal reason");
    };
  }

  @Test
  void everyCaseIsAnsweredAsHttpVerdictRendersIt() {
    SoftAssertions soft = new SoftAssertions();
    List<String> seen = new ArrayList<>();
    for (Map.Entry<String, Decision> c : cases().entrySet()) {
      Decision d = c.getValue();
      store.answer = d;
      HttpVerdict expected = HttpVerdict.of(d, T0, RateLimitHeaders.all());
      soft.assertThat(expected.status()).as(c.getKey() + ": the rendering's status").isEqualTo(expectedStatus(d));

      agree(soft, c.getKey() + " (rule)", given().get("/app/ok"), expected);
      if (!d.allowed()) {
        // @RateLimited's refusal, the exception Quarkus REST maps: the same rendering of the same decision.
        HttpVerdict thrown = HttpVerdict.of(new RateLimitExceededException(d), T0, RateLimitHeaders.all());
        soft.assertThat(thrown).as(c.getKey() + ": the refusal's rendering is the decision's")
            .usingRecursiveComparison().isEqualTo(expected);
        agree(soft, c.getKey() + " (@RateLimited)", given().get("/annotated"), expected);
      } else {
        Response r = given().get("/annotated");
        soft.assertThat(r.statusCode()).as(c.getKey() + " (@RateLimited)").isEqualTo(200);
        soft.assertThat(r.body().asString()).isEqualTo("ok");
      }
      seen.add(c.getKey());
    }
    soft.assertAll();
    assertThat(seen).hasSize(3 + 2 * (Reason.values().length - 1));
  }

  private static void agree(SoftAssertions soft, String name, Response r, HttpVerdict expected) {
    soft.assertThat(r.statusCode()).as(name + ": status").isEqualTo(expected.status());
    Map<String, String> want = new TreeMap<>();
    for (HttpVerdict.Header h : expected.headers()) {
      want.put(h.name(), h.value());
    }
    Map<String, String> sent = new TreeMap<>();
    for (String h : VERDICT_HEADERS) {
      if (r.header(h) != null) {
        sent.put(h, r.header(h));
      }
    }
    soft.assertThat(sent).as(name + ": the verdict's headers, and no other limit header").isEqualTo(want);
    if (expected.allowed()) {
      soft.assertThat(r.body().asString()).as(name + ": the application's body").isEqualTo("ok");
    } else {
      soft.assertThat(r.contentType()).as(name + ": content type").isEqualTo(HttpVerdict.PROBLEM_JSON);
      soft.assertThat(r.body().asString()).as(name + ": body").isEqualTo(expected.body());
    }
  }
}
