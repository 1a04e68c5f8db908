package dev.sluice.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.FailureMode;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.Ticker;
import dev.sluice.jdbc.store.DownJdbcStore;
import dev.sluice.memory.MemoryRateLimiter;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The filter scenarios, run against a real server (Jetty 12 with the servlet filter, the JDK
 * HttpServer with its filter) by a real {@link HttpClient}. Both filters must answer identically.
 */
abstract class AbstractFilterTest {
  static final long T0 = 1_700_000_000_000_000L; // epoch micros on a whole second
  static final Policy API = Policy.fixedWindow("api", 3, Duration.ofSeconds(60));

  final AtomicInteger handled = new AtomicInteger();
  final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();
  final ManualTicker ticker = ManualTicker.at(T0);
  private URI base;

  /**
   * The request header a test's own authentication turns into the request's principal (each server
   * installs it in front of the filter), so that a test can act as a user who chose a name.
   */
  static final String TEST_USER = "X-Test-User";

  /**
   * Starts the server under test on an ephemeral port with {@code rateLimit} in front of
   * {@link #respond}, behind an authentication that makes {@link #TEST_USER} the principal where
   * the server can ({@link #authenticates}).
   */
  abstract URI start(HttpRateLimit rateLimit) throws Exception;

  abstract void stop() throws Exception;

  /** Whether the filter sees the principal {@link #TEST_USER} names. */
  boolean authenticates() {
    return true;
  }

  /** Store clients a test opened, closed after the server stopped. */
  final List<AutoCloseable> cleanup = new ArrayList<>();

  @AfterEach void tearDown() throws Exception {
    stop();
    for (AutoCloseable c : cleanup) {
      c.close();
    }
  }

  /**
   * The application behind the filter: {@code /ok} 200, {@code /deny} 401, {@code /fail} 500,
   * {@code /throw} throws. Returns the status to answer, or throws.
   */
  int respond(String path) {
    handled.incrementAndGet();
    switch (path) {
      case "/deny": return 401;
      case "/fail": return 500;
      case "/throw": throw new IllegalStateException("handler failed (expected by the test)");
      default: return 200;
    }
  }

  /** The cost the handler of {@code path} reports in the {@code X-Usage-Tokens} response header: {@code /usage/<n>}. */
  static String usageHeader(String path) {
    return path.startsWith("/usage/") ? path.substring("/usage/".length()) : null;
  }

  /** The cost the handler of {@code path} reports in the {@code X-Usage-Tokens} request attribute: {@code /attr/<n>}, a Long. */
  static Long usageAttribute(String path) {
    return path.startsWith("/attr/") ? Long.valueOf(path.substring("/attr/".length())) : null;
  }

  /**
   * Issue 19: a cost limit reserves the estimate per request and settles it at the usage the handler
   * reports (header or attribute); no report, or a bad one, leaves the estimate charged; an overrun
   * goes into debt and the next request is refused.
   */
  @Test void aCostLimitSettlesEachRequestAtTheUsageItsHandlerReports() throws Exception {
    Policy tokens = Policy.fixedWindow("tokens", 1000, Duration.ofSeconds(60));
    MemoryRateLimiter lim = memory(tokens);
    serve(HttpRateLimit.builder(lim).cost(100, "X-Usage-Tokens").build());
    String key = "ip:127.0.0.1";
    assertThat(status("/usage/30")).isEqualTo(200);
    assertThat(lim.peek(key).remaining()).as("reserved 100, settled at 30").isEqualTo(970);
    assertThat(status("/attr/250")).isEqualTo(200);
    assertThat(lim.peek(key).remaining()).isEqualTo(720);
    assertThat(status("/ok")).isEqualTo(200);
    assertThat(lim.peek(key).remaining()).as("nothing reported: the estimate stays").isEqualTo(620);
    assertThat(status("/usage/lots")).isEqualTo(200);
    assertThat(status("/usage/1001")).isEqualTo(200);
    assertThat(status("/usage/12.5")).isEqualTo(200);
    assertThat(lim.peek(key).remaining()).as("bad reports leave the estimate charged").isEqualTo(320);
    assertThat(status("/usage/1000")).isEqualTo(200);
    assertThat(lim.peek(key).remaining()).isZero();
    HttpResponse<String> refused = get("/ok");
    assertThat(refused.statusCode()).as("1,680 charged against 1,000: in debt").isEqualTo(429);
    assertThat(handled.get()).isEqualTo(7);
  }

  @Test void aCostNeedsAnEstimateThePolicyCanGrantAndAUsageName() {
    MemoryRateLimiter lim = memory(API);
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> HttpRateLimit.builder(lim).cost(4, "X-Usage-Tokens").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("permits 4 exceeds 3, the most policy 'api' can ever grant at once; such a request could never be allowed");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> HttpRateLimit.builder(lim).cost(1, " "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("usage name \" \" is blank; name the request attribute or response header the handler reports its cost in,"
            + " such as \"X-Usage-Tokens\"");
  }

  void serve(HttpRateLimit rateLimit) throws Exception {
    base = start(rateLimit);
  }

  HttpResponse<String> get(String path, String... headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path)).timeout(Duration.ofSeconds(10)).GET();
    if (headers.length > 0) {
      b.headers(headers);
    }
    return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  /** The status, or -1 when the server dropped the connection (the JDK server does that when a handler throws). */
  int status(String path, String... headers) throws Exception {
    try {
      return get(path, headers).statusCode();
    } catch (IOException e) {
      return -1;
    }
  }

  MemoryRateLimiter memory(Policy policy) {
    return MemoryRateLimiter.builder(policy).ticker(ticker).build();
  }

  /**
   * Issue 31, item 1: three tenants on three plans chosen by a resolver over a header, limits exact
   * per tenant; an unknown plan and a resolver that throws are checked under the unresolved policy,
   * never let through unlimited; a plan changed (the cache invalidated) keeps the tenant's count.
   */
  @Test void aResolverChoosesEachRequestsPlanAndAnUnresolvedRequestIsNeverUnlimited() throws Exception {
    Policy free = Policy.fixedWindow("plans", 2, Duration.ofSeconds(60));
    java.util.Map<String, Policy> plans = new java.util.concurrent.ConcurrentHashMap<>(java.util.Map.of(
        "free", free,
        "pro", Policy.fixedWindow("plans", 5, Duration.ofSeconds(60)),
        "blocked", Policy.fixedWindow("plans", 1, Duration.ofSeconds(60))));
    java.util.Map<String, String> planOf = new java.util.concurrent.ConcurrentHashMap<>(java.util.Map.of(
        "acme", "pro", "initech", "free", "evil", "blocked"));
    dev.sluice.PolicyResolver<RequestView> resolver = dev.sluice.PolicyResolver.<RequestView>builder(r -> {
      String tenant = r.header("X-Tenant");
      if ("boom".equals(tenant)) {
        throw new IllegalStateException("the plan service is down (expected by the test)");
      }
      return plans.get(planOf.getOrDefault(tenant, "none"));
    }, plans.get("blocked")).cacheBy(r -> r.header("X-Tenant")).build();
    MemoryRateLimiter lim = memory(free);
    serve(HttpRateLimit.builder(lim).keyResolver(KeyResolver.header("X-Tenant")).policy(resolver).build());
    java.util.Map<String, Integer> admitted = new java.util.TreeMap<>();
    for (String tenant : java.util.List.of("acme", "initech", "evil", "nobody", "boom")) {
      for (int i = 0; i < 8; i++) {
        HttpResponse<String> r = get("/ok", "X-Tenant", tenant);
        if (r.statusCode() == 200) {
          admitted.merge(tenant, 1, Integer::sum);
        } else {
          assertThat(r.statusCode()).isEqualTo(429);
        }
      }
    }
    assertThat(admitted).containsExactly(java.util.Map.entry("acme", 5), java.util.Map.entry("boom", 1),
        java.util.Map.entry("evil", 1), java.util.Map.entry("initech", 2), java.util.Map.entry("nobody", 1));
    assertThat(get("/ok", "X-Tenant", "acme").headers().firstValue("RateLimit-Policy")).hasValueSatisfying(v -> assertThat(v).contains("q=5"));
    assertThat(resolver.failures()).as("every request of the tenants it could not resolve").isEqualTo(16);

    // initech upgrades to pro: the cached answer is invalidated, its 2 counted requests stay counted.
    planOf.put("initech", "pro");
    assertThat(status("/ok", "X-Tenant", "initech")).as("cached: still free").isEqualTo(429);
    resolver.invalidate("initech");
    for (int i = 0; i < 3; i++) {
      assertThat(status("/ok", "X-Tenant", "initech")).as("pro, request %d", i).isEqualTo(200);
    }
    assertThat(status("/ok", "X-Tenant", "initech")).as("5 of pro's 5, the free requests counted").isEqualTo(429);
  }

  @Test void allowedResponsesCarryTheLimitHeadersByteForByte() throws Exception {
    serve(HttpRateLimit.builder(memory(API)).build());
    HttpResponse<String> r = get("/ok");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body()).isEqualTo("ok");
    assertThat(r.headers().allValues("RateLimit-Policy")).containsExactly("\"api\";q=3;w=60");
    assertThat(r.headers().allValues("RateLimit")).containsExactly("\"api\";r=2;t=60");
    assertThat(r.headers().allValues("X-RateLimit-Limit")).containsExactly("3");
    assertThat(r.headers().allValues("X-RateLimit-Remaining")).containsExactly("2");
    assertThat(r.headers().allValues("X-RateLimit-Reset")).containsExactly("1700000060");
    ticker.advance(Duration.ofMillis(20_250));
    r = get("/ok");
    assertThat(r.headers().allValues("RateLimit")).containsExactly("\"api\";r=1;t=40");
    assertThat(r.headers().allValues("X-RateLimit-Remaining")).containsExactly("1");
  }

  @Test void headerFamiliesCanBeSwitchedOff() throws Exception {
    serve(HttpRateLimit.builder(memory(API)).headers(RateLimitHeaders.of(true, false)).build());
    HttpResponse<String> r = get("/ok");
    assertThat(r.headers().firstValue("RateLimit")).contains("\"api\";r=2;t=60");
    assertThat(r.headers().firstValue("X-RateLimit-Limit")).isEmpty();
  }

  @Test void overTheLimitAnswers429WithRetryAfterAndAProblemBody() throws Exception {
    serve(HttpRateLimit.builder(memory(API)).build());
    for (int i = 0; i < 3; i++) {
      assertThat(get("/ok").statusCode()).isEqualTo(200);
    }
    ticker.advance(Duration.ofMillis(15_500));
    HttpResponse<String> r = get("/ok");
    assertThat(r.statusCode()).isEqualTo(429);
    assertThat(r.headers().allValues("Retry-After")).containsExactly("45");
    assertThat(r.headers().allValues("Content-Type")).containsExactly("application/problem+json");
    assertThat(r.headers().allValues("RateLimit")).containsExactly("\"api\";r=0;t=45");
    assertThat(r.body()).isEqualTo("{\"type\":\"about:blank\",\"title\":\"Too Many Requests\",\"status\":429,"
        + "\"detail\":\"Rate limit of policy 'api' exceeded; retry after 45 seconds.\","
        + "\"allowed\":false,\"reason\":\"limit_exceeded\",\"policy\":\"api\",\"limit\":3,\"remaining\":0,"
        + "\"resetAt\":\"2023-11-14T22:14:20Z\",\"retryAfterSeconds\":45,\"retryAfterMillis\":44500}");
    assertThat(handled).hasValue(3);
    ticker.advance(Duration.ofSeconds(45));
    assertThat(get("/ok").statusCode()).isEqualTo(200);
  }

  @ParameterizedTest(name = "store {0}")
  @ValueSource(strings = {"redis", "jdbc"})
  void aStoreFailureDecidedClosedAnswers503WithoutLimitHeaders(String store) throws Exception {
    AtomicInteger storeErrors = new AtomicInteger();
    RateLimitListener countErrors = new RateLimitListener() {
      @Override public void onStoreCall(Policy policy, long latencyNanos, Throwable error) {
        if (error != null) {
          storeErrors.incrementAndGet();
        }
      }
    };
    serve(HttpRateLimit.builder(DownStore.limiter(store, API, FailureMode.closed(), countErrors, cleanup)).build());
    HttpResponse<String> r = get("/ok");
    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(r.headers().map().keySet()).noneMatch(h -> h.toLowerCase().contains("ratelimit"));
    assertThat(r.headers().allValues("Retry-After")).containsExactly("1");
    assertThat(r.headers().allValues("Content-Type")).containsExactly("application/problem+json");
    assertThat(r.body()).contains("\"status\":503").contains("\"reason\":\"store_unavailable\"").doesNotContain("\"remaining\"");
    assertThat(handled).hasValue(0);
    assertThat(storeErrors.get()).as("the limiter really tried its store").isPositive();
  }

  @ParameterizedTest(name = "store {0}")
  @ValueSource(strings = {"redis", "jdbc"})
  void aStoreFailureDecidedOpenPassesWithoutLimitHeaders(String store) throws Exception {
    AtomicInteger alerts = new AtomicInteger();
    serve(HttpRateLimit.builder(DownStore.limiter(store, API, FailureMode.open((p, reason, cause) -> alerts.incrementAndGet()),
        RateLimitListener.NONE, cleanup)).build());
    HttpResponse<String> r = get("/ok");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.headers().firstValue("RateLimit")).isEmpty();
    assertThat(r.headers().firstValue("X-RateLimit-Remaining")).isEmpty();
    assertThat(alerts).hasValue(1);
  }

  @Test void aClientSuppliedForwardedForIsIgnoredUnlessThePeerIsATrustedProxy() throws Exception {
    // The test client connects from 127.0.0.1, which is not in 10.0.0.0/8: rotating the header must not help.
    serve(HttpRateLimit.builder(memory(API)).keyResolver(KeyResolver.forwardedFor(TrustedProxies.of("10.0.0.0/8"))).build());
    for (int i = 0; i < 3; i++) {
      assertThat(status("/ok", "X-Forwarded-For", "198.51.100." + i)).isEqualTo(200);
    }
    assertThat(status("/ok", "X-Forwarded-For", "198.51.100.99")).isEqualTo(429);
  }

  @Test void forwardedForIsBelievedFromATrustedProxy() throws Exception {
    MemoryRateLimiter lim = memory(API);
    serve(HttpRateLimit.builder(lim).keyResolver(KeyResolver.forwardedFor(TrustedProxies.of("127.0.0.0/8", "::1"))).build());
    for (int i = 0; i < 3; i++) {
      assertThat(status("/ok", "X-Forwarded-For", "6.6.6.6, 198.51.100.7")).isEqualTo(200);
    }
    assertThat(status("/ok", "X-Forwarded-For", "6.6.6.6, 198.51.100.7")).isEqualTo(429);
    assertThat(status("/ok", "X-Forwarded-For", "198.51.100.8")).isEqualTo(200);
    assertThat(lim.peek("ip:198.51.100.7").remaining()).isZero();
    assertThat(lim.peek("ip:198.51.100.8").remaining()).isEqualTo(2);
  }

  /**
   * Issue 27, finding 3: a value one source offers, crafted to equal the key of another source (or of
   * another list of parts), never shares that key's budget. The victim spends its whole budget; the
   * attacker's crafted request must still be answered from a budget of its own. Before the fix a
   * header named like a source ({@code Ip}, {@code User}, {@code Route}, {@code Sha256}) gave that
   * source's key, and {@code and} joined its parts with an unescaped {@code |}.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("craftedKeys")
  void aValueCraftedToEqualAnotherSourcesKeyNeverSharesItsBudget(String pair, KeyResolver resolver, String[] victim,
      String[] attacker) throws Exception {
    Assumptions.assumeTrue(authenticates() || !List.of(victim).contains(TEST_USER) && !List.of(attacker).contains(TEST_USER),
        "this server's filters see no principal");
    serve(HttpRateLimit.builder(memory(API)).keyResolver(resolver).build());
    for (int i = 0; i < 3; i++) {
      assertThat(status("/ok", victim)).as("the victim's request " + (i + 1)).isEqualTo(200);
    }
    assertThat(status("/ok", victim)).as("the victim spent its budget").isEqualTo(429);
    assertThat(status("/ok", attacker)).as("the crafted request has a budget of its own").isEqualTo(200);
  }

  static Stream<Arguments> craftedKeys() {
    String longKey = "k".repeat(200); // hashed: sha256:<hex>
    String hashed = HttpRateLimit.normalize(KeyResolver.header("X-Api-Key").resolve(new FakeRequest("127.0.0.1").header("X-Api-Key", longKey)));
    return Stream.of(
        Arguments.of("header -> address", KeyResolver.header("Ip").orElse(KeyResolver.clientAddress()),
            new String[] {}, new String[] {"Ip", "127.0.0.1"}),
        Arguments.of("header value -> address", KeyResolver.header("X-Api-Key").orElse(KeyResolver.clientAddress()),
            new String[] {}, new String[] {"X-Api-Key", "ip:127.0.0.1"}),
        Arguments.of("header -> principal", KeyResolver.header("User").orElse(KeyResolver.principal()),
            new String[] {TEST_USER, "alice"}, new String[] {"User", "alice"}),
        Arguments.of("header -> route", KeyResolver.header("Route").orElse(KeyResolver.route()),
            new String[] {}, new String[] {"Route", "GET /ok"}),
        Arguments.of("header -> hashed key", KeyResolver.header("Sha256").orElse(KeyResolver.header("X-Api-Key")),
            new String[] {"X-Api-Key", longKey}, new String[] {"Sha256", hashed.substring("sha256:".length())}),
        Arguments.of("header -> other header", KeyResolver.header("X-Api-Key").orElse(KeyResolver.header("X-Tenant")),
            new String[] {"X-Tenant", "t"}, new String[] {"X-Api-Key", "t"}),
        Arguments.of("principal -> address", KeyResolver.principal().orElse(KeyResolver.clientAddress()),
            new String[] {}, new String[] {TEST_USER, "ip:127.0.0.1"}),
        Arguments.of("principal -> route", KeyResolver.principal().orElse(KeyResolver.route()),
            new String[] {}, new String[] {TEST_USER, "route:GET /ok"}),
        Arguments.of("two headers joined", KeyResolver.header("X-Api-Key").and(KeyResolver.header("X-Tenant")),
            new String[] {"X-Api-Key", "P|x-tenant:Q", "X-Tenant", "R"}, new String[] {"X-Api-Key", "P", "X-Tenant", "Q|x-tenant:R"}));
  }

  @Test void requestsWithoutIdentityShareTheOneUnknownBucket() throws Exception {
    MemoryRateLimiter lim = memory(API);
    serve(HttpRateLimit.builder(lim).keyResolver(KeyResolver.header("X-Api-Key")).build());
    for (int i = 0; i < 3; i++) {
      assertThat(status("/ok")).isEqualTo(200);
    }
    assertThat(status("/ok")).isEqualTo(429);
    assertThat(status("/ok", "X-Api-Key", "k1")).isEqualTo(200);
    assertThat(lim.peek("unknown").remaining()).isZero();
    assertThat(lim.trackedKeys()).isEqualTo(2);
  }

  @Test void skipFailedRequestsRefundsThrownAnd5xxAnswers() throws Exception {
    MemoryRateLimiter lim = memory(API);
    serve(HttpRateLimit.builder(lim).skipFailedRequests(true).build());
    for (int i = 0; i < 5; i++) {
      assertThat(status("/fail")).isEqualTo(500);
      assertThat(status("/throw")).isIn(500, -1);
    }
    awaitRemaining(lim, "ip:127.0.0.1", 3);
    assertThat(status("/deny")).isEqualTo(401); // a 4xx is the client's failure, not ours: it counts
    assertThat(status("/ok")).isEqualTo(200);
    assertThat(status("/ok")).isEqualTo(200);
    assertThat(status("/ok")).isEqualTo(429);
  }

  @Test void skipSuccessfulRequestsCountsOnlyFailures() throws Exception {
    Policy login = Policy.fixedWindow("login", 2, Duration.ofMinutes(5));
    MemoryRateLimiter lim = memory(login);
    serve(HttpRateLimit.builder(lim).skipSuccessfulRequests(true).build());
    for (int i = 0; i < 5; i++) {
      assertThat(status("/ok")).isEqualTo(200);
    }
    awaitRemaining(lim, "ip:127.0.0.1", 2);
    assertThat(status("/deny")).isEqualTo(401);
    assertThat(status("/deny")).isEqualTo(401);
    assertThat(status("/deny")).isEqualTo(429);
    assertThat(status("/ok")).isEqualTo(429);
  }

  /**
   * Waits (bounded) until {@code key} has {@code remaining} permits: a refund runs after the handler
   * returned, which a fast client can overtake by a hair.
   */
  static void awaitRemaining(MemoryRateLimiter lim, String key, long remaining) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (lim.peek(key).remaining() != remaining && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    assertThat(lim.peek(key).remaining()).as("remaining permits of " + key).isEqualTo(remaining);
  }

  @Test void theGlobalCeilingHoldsWhateverTheIdentityAndLeavesNoPartialCharge() throws Exception {
    Policy client = Policy.fixedWindow("api", 10, Duration.ofSeconds(60));
    Policy ceiling = Policy.fixedWindow("ceiling", 3, Duration.ofSeconds(60));
    MemoryRateLimiter lim = memory(client);
    serve(HttpRateLimit.builder(lim).keyResolver(KeyResolver.header("X-Api-Key")).globalCeiling(ceiling).build());
    HttpResponse<String> first = get("/ok", "X-Api-Key", "a");
    assertThat(first.headers().allValues("RateLimit-Policy")).containsExactly("\"api\";q=10;w=60, \"ceiling\";q=3;w=60");
    assertThat(first.headers().allValues("RateLimit")).containsExactly("\"api\";r=9;t=60, \"ceiling\";r=2;t=60");
    assertThat(first.headers().allValues("X-RateLimit-Remaining")).containsExactly("2");
    assertThat(status("/ok", "X-Api-Key", "b")).isEqualTo(200);
    assertThat(status("/ok", "X-Api-Key", "c")).isEqualTo(200);
    HttpResponse<String> r = get("/ok", "X-Api-Key", "d");
    assertThat(r.statusCode()).isEqualTo(429);
    assertThat(r.headers().allValues("RateLimit-Policy")).containsExactly("\"ceiling\";q=3;w=60");
    assertThat(r.body()).contains("\"policy\":\"ceiling\"");
    // d was charged and refunded: its own budget is whole.
    assertThat(lim.peek("header:x-api-key:d").remaining()).isEqualTo(10);
    assertThat(lim.peek("header:x-api-key:a").remaining()).isEqualTo(9);
  }

  @Test void aCeilingWhoseStoreIsDownAnswers503AndRefundsTheClientsPermit() throws Exception {
    MemoryRateLimiter lim = memory(API);
    Policy ceiling = Policy.fixedWindow("ceiling", 100, Duration.ofSeconds(60));
    serve(HttpRateLimit.builder(lim).globalCeiling(DownJdbcStore.limiter(ceiling, FailureMode.closed(), RateLimitListener.NONE), ceiling).build());
    HttpResponse<String> r = get("/ok");
    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(r.headers().firstValue("RateLimit")).isEmpty();
    assertThat(r.body()).contains("\"policy\":\"ceiling\"");
    assertThat(lim.peek("ip:127.0.0.1").remaining()).isEqualTo(3);
    assertThat(handled).hasValue(0);
  }

  @Test void concurrentRequestsAdmitExactlyTheLimit() throws Exception {
    Policy burst = Policy.fixedWindow("burst", 20, Duration.ofSeconds(60));
    MemoryRateLimiter lim = memory(burst);
    serve(HttpRateLimit.builder(lim).build());
    List<CompletableFuture<HttpResponse<String>>> inFlight = new ArrayList<>();
    for (int i = 0; i < 80; i++) {
      inFlight.add(client.sendAsync(HttpRequest.newBuilder(base.resolve("/ok")).timeout(Duration.ofSeconds(20)).build(),
          HttpResponse.BodyHandlers.ofString()));
    }
    Map<Integer, Long> byStatus = new TreeMap<>();
    for (CompletableFuture<HttpResponse<String>> f : inFlight) {
      byStatus.merge(f.get(30, TimeUnit.SECONDS).statusCode(), 1L, Long::sum);
    }
    assertThat(byStatus).containsExactly(Map.entry(200, 20L), Map.entry(429, 60L));
    assertThat(handled).hasValue(20);
  }
}
