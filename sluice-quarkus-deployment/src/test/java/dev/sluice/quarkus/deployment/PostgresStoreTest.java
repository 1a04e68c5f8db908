package dev.sluice.quarkus.deployment;

import static io.restassured.RestAssured.given;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.RateLimitListener;
import dev.sluice.Ticker;
import dev.sluice.http.HttpVerdict;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.jdbc.PostgresTestSupport;
import dev.sluice.quarkus.RateLimited;
import dev.sluice.quarkus.Sluice;
import io.quarkus.test.QuarkusUnitTest;
import io.restassured.RestAssured;
import io.restassured.response.Response;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.opentest4j.TestAbortedException;

/**
 * {@code sluice.store=postgres} on the shared PostgreSQL ({@code SLUICE_POSTGRES_URL}, default
 * jdbc:postgresql://127.0.0.1:5432/test?user=postgres; skipped loudly when unreachable, failed under
 * {@code CI=true}, as sluice-jdbc's tests), in a table of this run's own: an HTTP rule and a
 * {@code @RateLimited} method admit exactly their limit and refuse the next request with the verdict
 * {@link HttpVerdict} renders for the store's decision; concurrent requests are admitted exactly; the
 * readiness check is up.
 */
@EnabledIf("postgresReachable")
class PostgresStoreTest {
  /**
   * Other builds share the server: a table of this run's own, kept in a system property because the
   * class is loaded twice (by JUnit, and by the application's class loader).
   */
  static final String TABLE = (String) System.getProperties().computeIfAbsent("test.quarkus-postgres-table",
      k -> PostgresTestSupport.tableName());
  static final int LIMIT = 3;
  static final int BURST_LIMIT = 10;

  @RegisterExtension
  static final QuarkusUnitTest APP = new QuarkusUnitTest()
      .withApplicationRoot(jar -> jar.addClasses(Hello.class, Burst.class, Reports.class, Reporter.class,
          FrozenClock.class, Refusals.class))
      .overrideConfigKey("quarkus.http.test-port", "0")
      .overrideConfigKey("sluice.store", "postgres")
      .overrideConfigKey("sluice.postgres.url", PostgresTestSupport.URL)
      .overrideConfigKey("sluice.postgres.table", TABLE)
      .overrideConfigKey("sluice.timeout", "5s") // a loaded 2-core machine: the deadline is not what is tested
      .overrideConfigKey("sluice.policies[0].name", "api")
      .overrideConfigKey("sluice.policies[0].algorithm", "fixed-window")
      .overrideConfigKey("sluice.policies[0].limit", String.valueOf(LIMIT))
      .overrideConfigKey("sluice.policies[0].window", "1h")
      .overrideConfigKey("sluice.policies[1].name", "reports")
      .overrideConfigKey("sluice.policies[1].algorithm", "fixed-window")
      .overrideConfigKey("sluice.policies[1].limit", String.valueOf(LIMIT))
      .overrideConfigKey("sluice.policies[1].window", "1h")
      .overrideConfigKey("sluice.policies[2].name", "burst")
      .overrideConfigKey("sluice.policies[2].algorithm", "fixed-window")
      .overrideConfigKey("sluice.policies[2].limit", String.valueOf(BURST_LIMIT))
      .overrideConfigKey("sluice.policies[2].window", "1h")
      .overrideConfigKey("sluice.http.rules[0].patterns", "/hello")
      .overrideConfigKey("sluice.http.rules[0].policy", "api")
      .overrideConfigKey("sluice.http.rules[0].key", "header:X-Client")
      .overrideConfigKey("sluice.http.rules[1].patterns", "/burst")
      .overrideConfigKey("sluice.http.rules[1].policy", "burst")
      .overrideConfigKey("sluice.http.rules[1].key", "header:X-Client");

  @Inject
  Sluice sluice;

  @Inject
  Refusals refusals;

  /**
   * The application's clock, frozen: the store decides on the database server's clock, the verdicts are
   * rendered against this one, so a refused decision renders the same here as in the application.
   */
  @Singleton
  public static class FrozenClock implements Ticker {
    private final long now = Ticker.system().nowMicros();

    @Override public long nowMicros() {
      return now;
    }
  }

  /** The application's listener: the last refused decision of each policy, as the store made it. */
  @Singleton
  public static class Refusals implements RateLimitListener {
    final Map<String, Decision> last = new ConcurrentHashMap<>();

    @Override public void onRefusal(Decision decision, String key) {
      last.put(decision.policy().name(), decision);
    }
  }

  @Path("/hello")
  public static class Hello {
    @GET
    public String hello() {
      return "hello";
    }
  }

  @Path("/burst")
  public static class Burst {
    @GET
    public String burst() {
      return "burst";
    }
  }

  @ApplicationScoped
  public static class Reporter {
    @RateLimited(policy = "reports", key = "#tenant")
    public String report(String tenant) {
      return "report for " + tenant;
    }
  }

  @Path("/reports")
  public static class Reports {
    @Inject
    Reporter reporter;

    @GET
    @Path("/{tenant}")
    public String report(@PathParam("tenant") String tenant) {
      return reporter.report(tenant);
    }
  }

  static boolean postgresReachable() {
    try {
      PostgresTestSupport.requireServer(); // loud notice and abort when unreachable; an AssertionError under CI=true
      return true;
    } catch (TestAbortedException e) {
      return false;
    }
  }

  @AfterAll
  static void dropTheTable() {
    PostgresTestSupport.drop(PostgresTestSupport.URL, TABLE);
  }

  @Test
  void theRuleAdmitsItsLimitThenRefusesWithTheVerdictOfTheStoresDecision() throws Exception {
    assertThat(sluice.store().name()).isEqualTo("postgres");
    String client = "c-" + UUID.randomUUID();
    for (int i = 1; i <= LIMIT; i++) {
      given().header("X-Client", client).get("/hello").then().statusCode(200)
          .header("X-RateLimit-Limit", String.valueOf(LIMIT))
          .header("X-RateLimit-Remaining", String.valueOf(LIMIT - i));
    }
    Response refused = given().header("X-Client", client).get("/hello");
    assertSameVerdict(refused, "api");
    assertThat(rowsInTable()).as("the budgets are kept in this run's table " + TABLE).isPositive();
  }

  @Test
  void aRateLimitedMethodAdmitsItsLimitThenRefusesWithTheVerdictOfTheStoresDecision() {
    String tenant = "t-" + UUID.randomUUID();
    for (int i = 1; i <= LIMIT; i++) {
      given().get("/reports/" + tenant).then().statusCode(200);
    }
    Response refused = given().get("/reports/" + tenant);
    assertSameVerdict(refused, "reports");
    given().get("/reports/other-" + tenant).then().statusCode(200); // another key, another budget
  }

  /** Concurrent requests on one key: exactly the limit is admitted, the rest refused, none fails. */
  @Test
  void concurrentRequestsAreAdmittedExactly() throws Exception {
    String client = "c-" + UUID.randomUUID();
    URI uri = URI.create("http://localhost:" + RestAssured.port + "/burst");
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      List<Future<Integer>> statuses = new ArrayList<>();
      for (int i = 0; i < 4 * BURST_LIMIT; i++) {
        statuses.add(pool.submit(() -> http.send(HttpRequest.newBuilder(uri).header("X-Client", client)
            .timeout(Duration.ofSeconds(60)).GET().build(), HttpResponse.BodyHandlers.discarding()).statusCode()));
      }
      int admitted = 0;
      int refusedCount = 0;
      for (Future<Integer> f : statuses) {
        int status = f.get(120, TimeUnit.SECONDS);
        assertThat(status).isIn(200, 429);
        if (status == 200) {
          admitted++;
        } else {
          refusedCount++;
        }
      }
      assertThat(admitted).isEqualTo(BURST_LIMIT);
      assertThat(refusedCount).isEqualTo(3 * BURST_LIMIT);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void theReadinessCheckAsksTheStore() {
    Response r = given().get("/q/health/ready");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body().asString().replaceAll("\\s", "")).contains("\"name\":\"sluice\",\"status\":\"UP\"",
        "\"store\":\"postgres\"");
  }

  /**
   * {@code refused} is exactly what {@link HttpVerdict} renders for the policy's last refused decision
   * (the store's, heard by the application's listener) on the frozen clock: status, every header, body.
   */
  private void assertSameVerdict(Response refused, String policy) {
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    Decision d;
    while ((d = refusals.last.get(policy)) == null) { // told on the store's thread, perhaps after the response
      assertThat(System.nanoTime()).as("the listener never heard the refusal of " + policy).isLessThan(deadline);
      Thread.yield();
    }
    assertThat(d.allowed()).isFalse();
    assertThat(d.remaining()).isZero();
    HttpVerdict expected = HttpVerdict.of(d, sluice.ticker().nowMicros(), RateLimitHeaders.all());
    assertThat(refused.statusCode()).isEqualTo(429).isEqualTo(expected.status());
    assertThat(refused.contentType()).startsWith(HttpVerdict.PROBLEM_JSON);
    Map<String, String> sent = new LinkedHashMap<>();
    Map<String, String> want = new LinkedHashMap<>();
    for (HttpVerdict.Header h : expected.headers()) {
      sent.put(h.name(), refused.header(h.name()));
      want.put(h.name(), h.value());
    }
    assertThat(want).containsKeys("Retry-After", "RateLimit-Policy", "RateLimit", "X-RateLimit-Limit");
    assertThat(sent).isEqualTo(want);
    assertThat(refused.body().asString()).isEqualTo(expected.body())
        .contains("\"policy\":\"" + policy + "\"", "\"reason\":\"limit_exceeded\"");
  }

  private static long rowsInTable() throws Exception {
    try (Connection c = DriverManager.getConnection(PostgresTestSupport.URL); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM " + TABLE)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
