package dev.sluice.server.envoy;

import static dev.sluice.server.envoy.EnvoyClient.d;
import static dev.sluice.server.envoy.EnvoyClient.hits;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.Ticker;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.memory.MemoryRateLimiter;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.type.v3.RateLimitUnit;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.reflection.v1.ServerReflectionGrpc;
import io.grpc.reflection.v1.ServerReflectionRequest;
import io.grpc.reflection.v1.ServerReflectionResponse;
import io.grpc.stub.StreamObserver;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The configuration examples of envoyproxy/ratelimit's README, loaded unchanged from a directory of
 * files (one domain each), asked over a real gRPC channel with the published stubs, with the outcomes
 * that README states. The memory tier decides on a manual clock, so "per second" is exact.
 */
class EnvoyCompatibilityTest {
  static final String EXAMPLE_1 = """
      domain: mongo_cps
      descriptors:
        - key: database
          value: users
          rate_limit:
            unit: second
            requests_per_unit: 500

        - key: database
          value: default
          rate_limit:
            unit: second
            requests_per_unit: 500
      """;
  static final String EXAMPLE_2 = """
      domain: messaging
      descriptors:
        # Only allow 5 marketing messages a day
        - key: message_type
          value: marketing
          descriptors:
            - key: to_number
              rate_limit:
                unit: day
                requests_per_unit: 5

        # Only allow 100 messages a day to any unique phone number
        - key: to_number
          rate_limit:
            unit: day
            requests_per_unit: 100
      """;
  static final String EXAMPLE_3 = """
      domain: edge_proxy_per_ip
      descriptors:
        - key: remote_address
          rate_limit:
            unit: second
            requests_per_unit: 10

        # Black list IP
        - key: remote_address
          value: 50.0.0.5
          rate_limit:
            unit: second
            requests_per_unit: 0
      """;
  static final String EXAMPLE_4 = """
      domain: example4
      descriptors:
        - key: key
          value: value
          descriptors:
            - key: subkey
              rate_limit:
                requests_per_unit: 300
                unit: second
      """;
  static final String EXAMPLE_5 = """
      domain: internal
      descriptors:
        - key: ldap
          rate_limit:
            unlimited: true

        - key: azure
          rate_limit:
            unit: minute
            requests_per_unit: 100
      """;
  static final String EXAMPLE_6 = """
      domain: example6
      descriptors:
        - key: service
          descriptors:
            - key: user
              value: user-a
              rate_limit:
                requests_per_unit: 10
                unit: second
              shadow_mode: true
            - key: user
              value: user-b
              rate_limit:
                requests_per_unit: 20
                unit: second
      """;
  static final String EXAMPLE_7 = """
      domain: example7
      descriptors:
        - key: key_1
          value: value_1
          descriptors:
            - key: user
              value: bkthomps
              rate_limit:
                name: specific_limit
                requests_per_unit: 5
                unit: second
        - key: key_2
          value: value_2
          descriptors:
            - key: user
              value: bkthomps
              rate_limit:
                replaces:
                  - name: specific_limit
                requests_per_unit: 10
                unit: second
      """;
  static final String EXAMPLE_8 = """
      domain: example8
      descriptors:
        - key: key1
          detailed_metric: true
          rate_limit:
            unit: minute
            requests_per_unit: 10
        - key: key1
          value: value1
          rate_limit:
            unit: minute
            requests_per_unit: 20
      """;
  static final String EXAMPLE_9 = """
      domain: example9
      descriptors:
        - key: key1
          value: value*
          rate_limit:
            unit: minute
            requests_per_unit: 20
        - key: path
          value: /api/*/action
          rate_limit:
            unit: minute
            requests_per_unit: 20
        - key: route
          value: /api/*/resource/*/action
          rate_limit:
            unit: minute
            requests_per_unit: 20
      """;
  static final String EXAMPLE_11 = """
      domain: example11
      descriptors:
        # With share_threshold: true, all files/* matches share the same threshold
        - key: files
          value: files/*
          share_threshold: true
          rate_limit:
            unit: hour
            requests_per_unit: 10

        # Without share_threshold, each files_no_share/* match has its own isolated threshold
        - key: files_no_share
          value: files_no_share/*
          share_threshold: false
          rate_limit:
            unit: hour
            requests_per_unit: 10
      """;
  /** The extension: every Sluice algorithm behind the same descriptors. */
  static final String EXTENDED = """
      domain: sluice_ext
      descriptors:
        - key: api
          value: bursty
          rate_limit:
            unit: second
            requests_per_unit: 10
            sluice:
              algorithm: token-bucket
              burst: 20
        - key: api
          value: smooth
          rate_limit:
            unit: second
            requests_per_unit: 10
            sluice:
              algorithm: gcra
              burst: 2
        - key: api
          value: sliding
          rate_limit:
            unit: minute
            requests_per_unit: 4
            sluice:
              algorithm: sliding-window
      """;

  @TempDir Path dir;
  final ManualTicker clock = ManualTicker.at(1_000_000_000L);
  final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  EnvoyGrpcServer server;
  EnvoyClient client;

  void start(RateLimitHeaders headers, String... files) throws Exception {
    start(headers, clock, files);
  }

  /** The service and its memory limiter on {@code ticker}. */
  void start(RateLimitHeaders headers, Ticker ticker, String... files) throws Exception {
    for (int i = 0; i < files.length; i++) {
      Files.writeString(dir.resolve("config" + i + ".yaml"), files[i]);
    }
    EnvoyConfig config = EnvoyConfig.read(dir);
    MemoryRateLimiter limiter = MemoryRateLimiter.builder(Policy.fixedWindow("envoy", 1, Duration.ofSeconds(1))).ticker(ticker).build();
    server = new EnvoyGrpcServer(config, limiter, registry, headers, "127.0.0.1", 0, Duration.ofSeconds(2), ticker).start();
    client = new EnvoyClient(server.port());
  }

  void start(String... files) throws Exception {
    start(RateLimitHeaders.of(true, false), files);
  }

  @AfterEach void stop() {
    if (client != null) {
      client.close();
    }
    if (server != null) {
      server.close();
    }
  }

  /** How many of {@code n} identical requests were answered OK overall. */
  int admitted(int n, String domain, RateLimitDescriptor.Builder... ds) {
    int ok = 0;
    for (int i = 0; i < n; i++) {
      if (client.ask(domain, ds).getOverallCode() == Code.OK) {
        ok++;
      }
    }
    return ok;
  }

  @Test void example1SameKeyDifferentValuesAreSeparateLimits() throws Exception {
    start(EXAMPLE_1, EXAMPLE_2);
    assertThat(admitted(501, "mongo_cps", d("database", "users"))).isEqualTo(500);
    assertThat(admitted(501, "mongo_cps", d("database", "default"))).isEqualTo(500);
    // No rule for another value: not limited, no current_limit.
    RateLimitResponse other = client.ask("mongo_cps", d("database", "other"));
    assertThat(other.getOverallCode()).isEqualTo(Code.OK);
    assertThat(other.getStatuses(0).hasCurrentLimit()).isFalse();
    clock.advance(Duration.ofSeconds(1));
    assertThat(client.ask("mongo_cps", d("database", "users")).getOverallCode()).isEqualTo(Code.OK);
  }

  @Test void example2NestedDescriptorsAndSeveralDescriptorsPerRequest() throws Exception {
    start(EXAMPLE_1, EXAMPLE_2);
    RateLimitDescriptor.Builder marketing = d("message_type", "marketing", "to_number", "2061111111");
    RateLimitDescriptor.Builder number = d("to_number", "2061111111");
    RateLimitResponse first = client.ask("messaging", marketing, number);
    assertThat(first.getOverallCode()).isEqualTo(Code.OK);
    assertThat(first.getStatuses(0).getCurrentLimit().getRequestsPerUnit()).isEqualTo(5);
    assertThat(first.getStatuses(0).getCurrentLimit().getUnit()).isEqualTo(RateLimitResponse.RateLimit.Unit.DAY);
    assertThat(first.getStatuses(0).getLimitRemaining()).isEqualTo(4);
    assertThat(first.getStatuses(1).getCurrentLimit().getRequestsPerUnit()).isEqualTo(100);
    assertThat(first.getStatuses(1).getLimitRemaining()).isEqualTo(99);
    assertThat(first.getStatuses(0).getDurationUntilReset().getSeconds()).isEqualTo(86_400);
    assertThat(admitted(5, "messaging", marketing, number)).isEqualTo(4);
    // The logical OR: the marketing limit refuses the whole request...
    RateLimitResponse over = client.ask("messaging", marketing, number);
    assertThat(over.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(over.getStatuses(0).getCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(over.getStatuses(1).getCode()).isEqualTo(Code.OK);
    // ...and, unlike envoyproxy/ratelimit, leaves the other descriptor uncharged: 5 admitted, 95 left.
    assertThat(client.ask("messaging", number).getStatuses(0).getLimitRemaining()).isEqualTo(94);
    // Each number has its own marketing limit.
    assertThat(admitted(6, "messaging", d("message_type", "marketing", "to_number", "2062222222"))).isEqualTo(5);
  }

  @Test void example3MostSpecificMatchWinsAndZeroBlocksEverything() throws Exception {
    start(EXAMPLE_3);
    assertThat(admitted(11, "edge_proxy_per_ip", d("remote_address", "50.0.0.1"))).isEqualTo(10);
    assertThat(admitted(3, "edge_proxy_per_ip", d("remote_address", "50.0.0.5"))).isZero();
    assertThat(client.ask("edge_proxy_per_ip", d("remote_address", "50.0.0.5")).getStatuses(0).getCurrentLimit().getRequestsPerUnit())
        .isZero();
    clock.advance(Duration.ofSeconds(1));
    assertThat(admitted(11, "edge_proxy_per_ip", d("remote_address", "50.0.0.1"))).isEqualTo(10);
  }

  @Test void example4RulesApplyAtTheDepthOfTheDescriptor() throws Exception {
    start(EXAMPLE_4);
    RateLimitResponse deep = client.ask("example4", d("key", "value", "subkey", "subvalue"));
    assertThat(deep.getStatuses(0).getCurrentLimit().getRequestsPerUnit()).isEqualTo(300);
    // One entry only: the level has no rule, so nothing is limited.
    assertThat(client.ask("example4", d("key", "value")).getStatuses(0).hasCurrentLimit()).isFalse();
    // Three entries: deeper than the configuration, no rule.
    assertThat(client.ask("example4", d("key", "value", "subkey", "x", "more", "y")).getStatuses(0).hasCurrentLimit()).isFalse();
  }

  @Test void example5UnlimitedAnswersMaxUint32WithoutCounting() throws Exception {
    start(EXAMPLE_5);
    RateLimitResponse r = client.ask("internal", d("ldap", "x"));
    assertThat(r.getOverallCode()).isEqualTo(Code.OK);
    assertThat(Integer.toUnsignedLong(r.getStatuses(0).getLimitRemaining())).isEqualTo(4_294_967_295L);
    assertThat(r.getStatuses(0).hasCurrentLimit()).isFalse();
    assertThat(admitted(101, "internal", d("azure", "x"))).isEqualTo(100);
  }

  @Test void example6ShadowModeNeverRefusesButCounts() throws Exception {
    start(EXAMPLE_6);
    assertThat(admitted(15, "example6", d("service", "auth-service", "user", "user-a"))).isEqualTo(15);
    assertThat(admitted(21, "example6", d("service", "auth-service", "user", "user-b"))).isEqualTo(20);
    String scrape = registry.scrape();
    assertThat(scrape).contains("ratelimit_service_rate_limit_shadow_mode_total{descriptor=\"service.user_user-a\",domain=\"example6\"} 5.0")
        .contains("ratelimit_service_rate_limit_over_limit_total{descriptor=\"service.user_user-a\",domain=\"example6\"} 5.0")
        .contains("ratelimit_service_rate_limit_total_hits_total{descriptor=\"service.user_user-a\",domain=\"example6\"} 15.0")
        .contains("ratelimit_service_rate_limit_within_limit_total{descriptor=\"service.user_user-b\",domain=\"example6\"} 20.0")
        .contains("ratelimit_service_rate_limit_near_limit_total{descriptor=\"service.user_user-b\",domain=\"example6\"} 4.0");
  }

  @Test void example7ReplacesDropsTheReplacedRuleAndLeavesItUncharged() throws Exception {
    start(EXAMPLE_7);
    RateLimitDescriptor.Builder one = d("key_1", "value_1", "user", "bkthomps");
    RateLimitDescriptor.Builder two = d("key_2", "value_2", "user", "bkthomps");
    // Both together: only the replacing 10/s applies.
    assertThat(admitted(11, "example7", one, two)).isEqualTo(10);
    // The replaced 5/s was not affected by those 10.
    assertThat(admitted(6, "example7", one)).isEqualTo(5);
  }

  @Test void example8DetailedMetricKeepsTheValue() throws Exception {
    start(EXAMPLE_8);
    client.ask("example8", d("key1", "unspecified_value"));
    client.ask("example8", d("key1", "value1"));
    assertThat(registry.scrape())
        .contains("ratelimit_service_rate_limit_total_hits_total{descriptor=\"key1_unspecified_value\",domain=\"example8\"} 1.0")
        .contains("ratelimit_service_rate_limit_total_hits_total{descriptor=\"key1_value1\",domain=\"example8\"} 1.0");
    assertThat(client.ask("example8", d("key1", "value1")).getStatuses(0).getCurrentLimit().getRequestsPerUnit()).isEqualTo(20);
  }

  @Test void example9WildcardsTrailingMiddleAndMultiple() throws Exception {
    start(EXAMPLE_9);
    for (String[] match : List.of(new String[] {"key1", "value1"}, new String[] {"key1", "valueXYZ"}, new String[] {"key1", "value"},
        new String[] {"path", "/api/123/action"}, new String[] {"route", "/api/v1/resource/123/action"})) {
      assertThat(client.ask("example9", d(match)).getStatuses(0).getCurrentLimit().getRequestsPerUnit()).as(match[1]).isEqualTo(20);
    }
    for (String[] miss : List.of(new String[] {"key1", "valu"}, new String[] {"path", "/api/123/other"},
        new String[] {"route", "/api/v1/resource/123/other"})) {
      assertThat(client.ask("example9", d(miss)).getStatuses(0).hasCurrentLimit()).as(miss[1]).isFalse();
    }
    // Each matching value has its own threshold.
    assertThat(admitted(21, "example9", d("path", "/api/7/action"))).isEqualTo(20);
    assertThat(admitted(1, "example9", d("path", "/api/8/action"))).isEqualTo(1);
  }

  @Test void example11ShareThresholdSharesOneBudget() throws Exception {
    start(EXAMPLE_11);
    assertThat(admitted(5, "example11", d("files", "files/a.pdf"))).isEqualTo(5);
    assertThat(admitted(5, "example11", d("files", "files/b.csv"))).isEqualTo(5);
    assertThat(client.ask("example11", d("files", "files/c.txt")).getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(admitted(10, "example11", d("files_no_share", "files_no_share/a.pdf"))).isEqualTo(10);
    assertThat(client.ask("example11", d("files_no_share", "files_no_share/b.csv")).getOverallCode()).isEqualTo(Code.OK);
  }

  /**
   * Issue 27, finding 3, in Envoy mode: a descriptor crafted to equal another's budget key never
   * shares its budget. Envoy's entries were already escaped (the two crafted pairs of entries
   * passed before the fix), but the domain was no part of the key while two rules of two domains
   * can get one policy name: {@code a} / {@code b_c.b} and {@code a.b_c} / {@code b} are both
   * {@code a.b_c.b}, so a client of domain {@code a.b_c} spent domain {@code a}'s budget.
   */
  @Test void aValueCraftedToEqualAnotherSourcesKeyNeverSharesItsBudget() throws Exception {
    start("""
        domain: a
        descriptors:
          - key: b
            value: c.b
            rate_limit: {unit: minute, requests_per_unit: 1}
          - key: api_key
            descriptors:
              - key: tenant
                rate_limit: {unit: minute, requests_per_unit: 1}
        """, """
        domain: a.b_c
        descriptors:
          - key: b
            rate_limit: {unit: minute, requests_per_unit: 1}
        """);
    // two entries whose values carry the separators of the other pair
    assertThat(admitted(2, "a", d("api_key", "P|tenant=Q", "tenant", "R"))).isEqualTo(1);
    assertThat(admitted(1, "a", d("api_key", "P", "tenant", "Q|tenant=R"))).as("the crafted pair").isEqualTo(1);
    assertThat(admitted(1, "a", d("api_key", "P|tenant:Q", "tenant", "R"))).isEqualTo(1);
    assertThat(admitted(1, "a", d("api_key", "P", "tenant", "Q|tenant:R"))).as("the crafted pair").isEqualTo(1);
    // one entry of two domains whose rules have one policy name
    assertThat(admitted(2, "a", d("b", "c.b"))).isEqualTo(1);
    assertThat(admitted(1, "a.b_c", d("b", "c.b"))).as("domain a.b_c's own budget").isEqualTo(1);
  }

  @Test void hitsAddendZeroMeansOneAndTheDescriptorsOwnWins() throws Exception {
    start(EXAMPLE_5);
    assertThat(client.ask("internal", 0, d("azure", "x")).getStatuses(0).getLimitRemaining()).isEqualTo(99);
    assertThat(client.ask("internal", 10, d("azure", "x")).getStatuses(0).getLimitRemaining()).isEqualTo(89);
    assertThat(client.ask("internal", 10, hits(d("azure", "x"), 2)).getStatuses(0).getLimitRemaining()).isEqualTo(87);
    // A descriptor's explicit 0 reads without charging.
    assertThat(client.ask("internal", 0, hits(d("azure", "x"), 0)).getStatuses(0).getLimitRemaining()).isEqualTo(87);
    // More than the limit at once can never fit: over the limit, nothing charged.
    assertThat(client.ask("internal", 101, d("azure", "x")).getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(client.ask("internal", 87, d("azure", "x")).getOverallCode()).isEqualTo(Code.OK);
    assertThat(client.ask("internal", 1, d("azure", "x")).getOverallCode()).isEqualTo(Code.OVER_LIMIT);
  }

  @Test void aDescriptorsOwnLimitOverridesTheConfiguration() throws Exception {
    start(EXAMPLE_5);
    RateLimitDescriptor.Builder own = d("azure", "y").setLimit(RateLimitDescriptor.RateLimitOverride.newBuilder()
        .setRequestsPerUnit(3).setUnit(RateLimitUnit.HOUR));
    assertThat(admitted(4, "internal", own)).isEqualTo(3);
    RateLimitResponse r = client.ask("internal", own);
    assertThat(r.getStatuses(0).getCurrentLimit().getRequestsPerUnit()).isEqualTo(3);
    assertThat(r.getStatuses(0).getCurrentLimit().getUnit()).isEqualTo(RateLimitResponse.RateLimit.Unit.HOUR);
    // Also for descriptors no rule matches.
    RateLimitDescriptor.Builder unconfigured = d("nothing", "here").setLimit(RateLimitDescriptor.RateLimitOverride.newBuilder()
        .setRequestsPerUnit(1).setUnit(RateLimitUnit.MINUTE));
    assertThat(admitted(2, "internal", unconfigured)).isEqualTo(1);
  }

  @Test void extensionKeysRunEverySluiceAlgorithm() throws Exception {
    start(EXTENDED);
    // Token bucket: 20 at once, then 10 per second.
    assertThat(admitted(21, "sluice_ext", d("api", "bursty"))).isEqualTo(20);
    clock.advance(Duration.ofMillis(100));
    assertThat(admitted(2, "sluice_ext", d("api", "bursty"))).isEqualTo(1);
    // GCRA: a burst of 2, then one per 100 ms.
    assertThat(admitted(3, "sluice_ext", d("api", "smooth"))).isEqualTo(2);
    clock.advance(Duration.ofMillis(100));
    assertThat(admitted(2, "sluice_ext", d("api", "smooth"))).isEqualTo(1);
    // Sliding window: 4 per minute, weighted across the boundary.
    assertThat(admitted(5, "sluice_ext", d("api", "sliding"))).isEqualTo(4);
    clock.advance(Duration.ofSeconds(60)); // 40 s into the next window: 1/3 of the previous 4 still weighs
    assertThat(admitted(4, "sluice_ext", d("api", "sliding"))).isEqualTo(2);
  }

  @Test void responseHeadersCarryTheIetfFieldsAndXRateLimitWhenAsked() throws Exception {
    start(RateLimitHeaders.all(), EXAMPLE_5);
    RateLimitResponse ok = client.ask("internal", d("azure", "x"));
    Map<String, String> h = headers(ok.getResponseHeadersToAddList());
    assertThat(h).containsEntry("RateLimit-Policy", "\"internal.azure\";q=100;w=60")
        .containsKey("RateLimit").containsEntry("X-RateLimit-Limit", "100").containsEntry("X-RateLimit-Remaining", "99");
    client.ask("internal", 99, d("azure", "x"));
    RateLimitResponse over = client.ask("internal", d("azure", "x"));
    assertThat(headers(over.getResponseHeadersToAddList())).containsKey("Retry-After");
  }

  @Test void ietfHeadersByDefaultAndNoneWhenOff() throws Exception {
    start(EXAMPLE_5);
    assertThat(headers(client.ask("internal", d("azure", "x")).getResponseHeadersToAddList()))
        .containsKeys("RateLimit", "RateLimit-Policy").doesNotContainKey("X-RateLimit-Limit");
    stop();
    start((RateLimitHeaders) null, EXAMPLE_5);
    assertThat(client.ask("internal", d("azure", "x")).getResponseHeadersToAddList()).isEmpty();
  }

  @Test void badRequestsAreInvalidArgumentNamingTheRule() throws Exception {
    start(EXAMPLE_5);
    assertThatThrownBy(() -> client.ask("", d("azure", "x"))).isInstanceOf(StatusRuntimeException.class)
        .hasMessage("INVALID_ARGUMENT: rate limit domain must not be empty");
    assertThatThrownBy(() -> client.ask("internal")).isInstanceOf(StatusRuntimeException.class)
        .hasMessage("INVALID_ARGUMENT: rate limit descriptor list must not be empty");
    // An unknown domain limits nothing, as in envoyproxy/ratelimit.
    assertThat(client.ask("nowhere", d("azure", "x")).getOverallCode()).isEqualTo(Code.OK);
    // A huge value is a key like any other: hashed, still limited.
    String longValue = "v".repeat(100_000);
    assertThat(admitted(101, "internal", d("azure", longValue))).isEqualTo(100);
  }

  /**
   * Issue 27, finding 4: one request of 10,000 descriptors of one rule, each with its own value,
   * filled the memory store's key table (10,000 keys), so every new value of the rule was refused
   * {@code key_table_full} for the rest of the window while known ones kept working; on Redis the one
   * call took 8 s. Descriptors per request and entries per descriptor are bounded before anything is
   * decided.
   */
  @Test void oneRequestOfTenThousandDescriptorsIsInvalidArgumentAndLocksNoOneOut() throws Exception {
    start(EXAMPLE_3);
    RateLimitRequest.Builder spray = RateLimitRequest.newBuilder().setDomain("edge_proxy_per_ip");
    for (int i = 0; i < 10_000; i++) {
      spray.addDescriptors(d("remote_address", "10.1." + (i >> 8) + "." + (i & 255)));
    }
    assertThatThrownBy(() -> client.stub.withDeadlineAfter(30, TimeUnit.SECONDS).shouldRateLimit(spray.build()))
        .isInstanceOf(StatusRuntimeException.class)
        .hasMessage("INVALID_ARGUMENT: the request has 10000 descriptors; at most " + EnvoyRateLimitService.MAX_DESCRIPTORS
            + " are accepted in one request");
    // Nothing was charged and no key was taken: a new address has its whole budget.
    assertThat(admitted(11, "edge_proxy_per_ip", d("remote_address", "50.0.0.1"))).isEqualTo(10);
    // At the bound, a request is decided.
    RateLimitDescriptor.Builder[] most = new RateLimitDescriptor.Builder[EnvoyRateLimitService.MAX_DESCRIPTORS];
    for (int i = 0; i < most.length; i++) {
      most[i] = d("remote_address", "10.2.0." + i);
    }
    RateLimitResponse atBound = client.ask("edge_proxy_per_ip", most);
    assertThat(atBound.getOverallCode()).isEqualTo(Code.OK);
    assertThat(atBound.getStatusesCount()).isEqualTo(EnvoyRateLimitService.MAX_DESCRIPTORS);
    // Entries per descriptor likewise: the bound passes (no rule that deep: not limited), one more is refused.
    String[] deep = new String[2 * EnvoyRateLimitService.MAX_ENTRIES];
    for (int i = 0; i < deep.length; i += 2) {
      deep[i] = "remote_address";
      deep[i + 1] = "10.3.0." + i;
    }
    assertThat(client.ask("edge_proxy_per_ip", d(deep)).getOverallCode()).isEqualTo(Code.OK);
    String[] deeper = java.util.Arrays.copyOf(deep, deep.length + 2);
    deeper[deep.length] = "remote_address";
    deeper[deep.length + 1] = "10.3.1.1";
    assertThatThrownBy(() -> client.ask("edge_proxy_per_ip", d("remote_address", "10.4.0.1"), d(deeper)))
        .isInstanceOf(StatusRuntimeException.class)
        .hasMessage("INVALID_ARGUMENT: descriptor #2 has " + (EnvoyRateLimitService.MAX_ENTRIES + 1) + " entries; at most "
            + EnvoyRateLimitService.MAX_ENTRIES + " are accepted in one descriptor");
    assertThat(admitted(11, "edge_proxy_per_ip", d("remote_address", "10.4.0.1"))).as("the refused request charged nothing").isEqualTo(10);
  }

  /**
   * Issue 27, finding 5: a request that is no {@code RateLimitRequest} (invalid UTF-8 in a string, a
   * truncated message, garbage) was answered {@code UNKNOWN} and logged a 36-line stack trace each
   * time, where docs/envoy.md promises {@code INVALID_ARGUMENT} and at most one line, rate-limited.
   */
  @Test void malformedRequestsAreInvalidArgumentWithAtMostOneLogLine() throws Exception {
    start(EXAMPLE_5);
    byte[] valid = RateLimitRequest.newBuilder().setDomain("internal").addDescriptors(d("azure", "x")).build().toByteArray();
    byte[] overlongNul = {0x0A, 0x02, (byte) 0xC0, (byte) 0x80}; // domain: C0 80, the overlong spelling of NUL
    byte[] truncated = java.util.Arrays.copyOf(valid, valid.length - 2);
    byte[] garbage = {(byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF,
        (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, 0x01};
    try (CapturedLogs logs = new CapturedLogs()) {
      for (int round = 0; round < 3; round++) {
        for (byte[] body : List.of(overlongNul, truncated, garbage)) {
          assertThatThrownBy(() -> client.askRaw(body)).isInstanceOfSatisfying(StatusRuntimeException.class,
                  e -> assertThat(e.getStatus().getCode()).isEqualTo(io.grpc.Status.Code.INVALID_ARGUMENT))
              .hasMessageStartingWith("INVALID_ARGUMENT: the request is not a valid envoy.service.ratelimit.v3.RateLimitRequest: ");
        }
      }
      assertThat(logs.lines()).as("9 malformed requests").hasSize(1).allMatch(l -> l.contains("malformed ShouldRateLimit request"));
      clock.advance(EnvoyRateLimitService.MALFORMED_LOG_INTERVAL);
      assertThatThrownBy(() -> client.askRaw(garbage)).isInstanceOf(StatusRuntimeException.class);
      assertThat(logs.lines()).hasSize(2);
      assertThat(logs.lines().get(1)).contains("8 more since the last");
    }
    assertThat(client.askRaw(valid)).isNotEmpty();
  }

  /**
   * Issue 27, finding 5: a {@code hits_addend} of 2^64-1 was counted whole, and
   * {@code ratelimit_service_rate_limit_total_hits_total} stood at 9.2e18, where a double no longer
   * moves by one.
   */
  @Test void aHugeHitsAddendIsOverTheLimitAndLeavesTheHitsCounterCounting() throws Exception {
    start(EXAMPLE_5);
    RateLimitResponse huge = client.ask("internal", hits(d("azure", "x"), -1L)); // 2^64 - 1 as a uint64
    assertThat(huge.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    double counted = totalHits("internal", "azure");
    assertThat(counted).isEqualTo((double) EnvoyRateLimitService.MAX_COUNTED_HITS);
    assertThat(client.ask("internal", d("azure", "x")).getStatuses(0).getLimitRemaining()).as("nothing was charged").isEqualTo(99);
    assertThat(totalHits("internal", "azure")).isEqualTo(counted + 1);
  }

  double totalHits(String domain, String descriptor) {
    return registry.get("ratelimit.service.rate_limit.total_hits").tag("domain", domain).tag("descriptor", descriptor).counter().count();
  }

  /**
   * Issue 27, finding 5: the service read "now" before the limiter decided, so on a real clock a
   * key's first hit under a 60 s rule was answered {@code duration_until_reset} 60 s + 22 us, and the
   * header said {@code t=61} beside {@code w=60}.
   */
  @Test void aFirstHitsResetIsAtMostTheWindowAndTheHeaderAgrees() throws Exception {
    java.util.concurrent.atomic.AtomicLong readings = new java.util.concurrent.atomic.AtomicLong();
    Ticker moving = () -> 1_000_000_000L + readings.incrementAndGet(); // a microsecond passes between any two readings
    start(RateLimitHeaders.of(true, false), moving, EXAMPLE_5);
    RateLimitResponse first = client.ask("internal", d("azure", "first"));
    com.google.protobuf.Duration until = first.getStatuses(0).getDurationUntilReset();
    long micros = until.getSeconds() * 1_000_000 + until.getNanos() / 1_000;
    assertThat(micros).isBetween(59_000_000L, 60_000_000L);
    Map<String, String> h = headers(first.getResponseHeadersToAddList());
    assertThat(h).containsEntry("RateLimit-Policy", "\"internal.azure\";q=100;w=60").containsEntry("RateLimit", "\"internal.azure\";r=99;t=60");
  }

  /**
   * Issue 27, finding 5: 10,000 distinct {@code detailed_metric} values made {@code /metrics} 4.7 MB
   * with 50,114 samples: the stat keys that carry request values are capped, the rest count under
   * {@code _other}.
   */
  @Test void distinctDetailedMetricValuesAreCappedSoTheScrapeStaysBounded() throws Exception {
    start(EXAMPLE_8);
    for (int i = 0; i < 10_000; i += 50) {
      RateLimitDescriptor.Builder[] batch = new RateLimitDescriptor.Builder[50];
      for (int j = 0; j < batch.length; j++) {
        batch[j] = d("key1", "v" + (i + j));
      }
      client.ask("example8", batch);
    }
    client.ask("example8", d("key1", "value1")); // a configured value: its own series, whatever the cap
    String scrape = registry.scrape();
    long series = scrape.lines().filter(l -> l.startsWith("ratelimit_service_rate_limit_")).count();
    assertThat(series).as(scrape.length() + " characters").isLessThanOrEqualTo(5L * (EnvoyMetrics.MAX_VALUE_STAT_KEYS + 2));
    assertThat(totalHits("example8", "_other")).isEqualTo(10_000 - EnvoyMetrics.MAX_VALUE_STAT_KEYS);
    assertThat(totalHits("example8", "key1_v0")).isEqualTo(1);
    assertThat(totalHits("example8", "key1_value1")).isEqualTo(1);
  }

  @Test void healthAndReflectionOnTheSamePort() throws Exception {
    start(EXAMPLE_5);
    HealthCheckResponse health = HealthGrpc.newBlockingStub(client.channel).withDeadlineAfter(5, TimeUnit.SECONDS)
        .check(HealthCheckRequest.newBuilder().setService("envoy.service.ratelimit.v3.RateLimitService").build());
    assertThat(health.getStatus()).isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
    CompletableFuture<ServerReflectionResponse> answer = new CompletableFuture<>();
    StreamObserver<ServerReflectionRequest> ask = ServerReflectionGrpc.newStub(client.channel).serverReflectionInfo(
        new StreamObserver<>() {
          @Override public void onNext(ServerReflectionResponse r) { answer.complete(r); }

          @Override public void onError(Throwable t) { answer.completeExceptionally(t); }

          @Override public void onCompleted() {}
        });
    ask.onNext(ServerReflectionRequest.newBuilder().setListServices("").build());
    ServerReflectionResponse r = answer.get(5, TimeUnit.SECONDS);
    ask.onCompleted();
    assertThat(r.getListServicesResponse().getServiceList()).extracting(s -> s.getName())
        .contains("envoy.service.ratelimit.v3.RateLimitService", "grpc.health.v1.Health");
  }

  @Test void severalDomainsFromOneDirectoryAndTheirErrors() throws Exception {
    start(EXAMPLE_1, EXAMPLE_2, EXAMPLE_3, EXAMPLE_5);
    assertThat(EnvoyConfig.read(dir).domains()).containsExactlyInAnyOrder("mongo_cps", "messaging", "edge_proxy_per_ip", "internal");
    Files.writeString(dir.resolve("config9.yaml"), EXAMPLE_1);
    assertThatThrownBy(() -> EnvoyConfig.read(dir)).hasMessage(dir.resolve("config9.yaml") + ":1: domain 'mongo_cps' is configured twice; one file per domain");
  }

  static Map<String, String> headers(List<HeaderValue> list) {
    Map<String, String> m = new java.util.LinkedHashMap<>();
    for (HeaderValue h : list) {
      m.put(h.getKey(), h.getValue());
    }
    return m;
  }
}
