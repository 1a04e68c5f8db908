package dev.sluice.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Ticker;
import dev.sluice.guard.RateLimitExceededException;
import dev.sluice.memory.MemoryRateLimiter;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class HttpVerdictTest {
  private static final long T0 = 1_700_000_000_000_000L; // epoch micros, a whole second: 2023-11-14T22:13:20Z
  private static final Policy API = Policy.fixedWindow("api", 10, Duration.ofSeconds(60));

  private static HttpVerdict.Header h(String name, String value) {
    return new HttpVerdict.Header(name, value);
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(Reason.class)
  void statusPerReason(Reason reason) {
    int expected = switch (reason) {
      case WITHIN_LIMIT, LIMIT_EXCEEDED, KEY_TABLE_FULL, CONTENTION -> 429;
      case STORE_UNAVAILABLE, TIMEOUT, CORRUPT_STATE, INVALID_CLOCK -> 503;
    };
    for (Path path : Path.values()) {
      Decision refused = Decision.builder(API).refused(reason).path(path).resetAtMicros(T0 + 1_000_000).retryAfterMicros(1_000_000).build();
      assertThat(HttpVerdict.status(refused)).as(reason + " on " + path).isEqualTo(expected);
      assertThat(HttpVerdict.status(Decision.builder(API).allowed(reason).path(path).remaining(5).resetAtMicros(T0).build())).isEqualTo(200);
    }
  }

  @Test void aRefusalIs429WithRetryAfterTheLimitHeadersAndTheProblemBody() {
    ManualTicker t = ManualTicker.at(T0);
    MemoryRateLimiter lim = MemoryRateLimiter.builder(Policy.fixedWindow("login", 1, Duration.ofMillis(1200))).ticker(t).build();
    lim.tryAcquire("k");
    HttpVerdict v = HttpVerdict.of(lim.tryAcquire("k"), t.nowMicros(), RateLimitHeaders.all());
    assertThat(v.status()).isEqualTo(429);
    assertThat(v.allowed()).isFalse();
    assertThat(v.headers()).containsExactly(
        h("Retry-After", "2"),
        h("RateLimit-Policy", "\"login\";q=1;w=2"),
        h("RateLimit", "\"login\";r=0;t=2"),
        h("X-RateLimit-Limit", "1"),
        h("X-RateLimit-Remaining", "0"),
        h("X-RateLimit-Reset", "1700000002"));
    assertThat(v.body()).isEqualTo("{\"type\":\"about:blank\",\"title\":\"Too Many Requests\",\"status\":429,"
        + "\"detail\":\"Rate limit of policy 'login' exceeded; retry after 2 seconds.\","
        + "\"allowed\":false,\"reason\":\"limit_exceeded\",\"policy\":\"login\",\"limit\":1,\"remaining\":0,"
        + "\"resetAt\":\"2023-11-14T22:13:21.200Z\",\"retryAfterSeconds\":2,\"retryAfterMillis\":1200}");
    assertThat(v.detail()).isEqualTo("Rate limit of policy 'login' exceeded; retry after 2 seconds.");
    assertThat(HttpVerdict.of(lim.tryAcquire("k"), t.nowMicros(), RateLimitHeaders.of(false, false)).headers())
        .containsExactly(h("Retry-After", "2"));
  }

  /**
   * Issue 17.7: a token bucket refused with Retry-After: 1 beside RateLimit: "uploads";r=0;t=4, which
   * says nothing is available for 4 s. On every algorithm a refusal's t (and X-RateLimit-Reset) is
   * the instant its Retry-After names, and waiting that long is enough.
   */
  @ParameterizedTest(name = "{0}")
  @org.junit.jupiter.params.provider.ValueSource(strings = {"fixed-window", "sliding-window", "token-bucket", "gcra", "sliding-log"})
  void aRefusalsTAndResetAgreeWithItsRetryAfterOnEveryAlgorithm(String algorithm) {
    Duration w = Duration.ofSeconds(4);
    Policy p = switch (algorithm) {
      case "fixed-window" -> Policy.fixedWindow("uploads", 4, w);
      case "sliding-window" -> Policy.slidingWindow("uploads", 4, w);
      case "token-bucket" -> Policy.tokenBucket("uploads", 4, 1, Duration.ofSeconds(1));
      case "gcra" -> Policy.gcra("uploads", 1, Duration.ofSeconds(1), 4);
      default -> Policy.slidingLog("uploads", 4, w);
    };
    ManualTicker t = ManualTicker.at(T0 + 250_000);
    MemoryRateLimiter lim = MemoryRateLimiter.builder(p).ticker(t).build();
    for (int i = 0; i < 4; i++) {
      assertThat(lim.tryAcquire("k").allowed()).isTrue();
      t.advance(Duration.ofMillis(100));
    }
    Decision refused = lim.tryAcquire("k");
    HttpVerdict v = HttpVerdict.of(refused, t.nowMicros(), RateLimitHeaders.all());
    assertThat(v.status()).isEqualTo(429);
    Map<String, String> h = new java.util.HashMap<>();
    v.headers().forEach(x -> h.put(x.name(), x.value()));
    long retryAfter = Long.parseLong(h.get("Retry-After"));
    assertThat(h.get("RateLimit")).isEqualTo("\"uploads\";r=0;t=" + retryAfter);
    assertThat(Long.parseLong(h.get("X-RateLimit-Reset"))).isEqualTo(Math.floorDiv(t.nowMicros() + retryAfter * 1_000_000L + 999_999, 1_000_000L));
    if (algorithm.equals("token-bucket") || algorithm.equals("gcra")) {
      assertThat(retryAfter).as("one permit back in a second, not the bucket full in four").isEqualTo(1);
    }
    t.advance(Duration.ofSeconds(retryAfter));
    assertThat(lim.tryAcquire("k").allowed()).as("waiting as told is enough").isTrue();
  }

  /** Issue 17.7: the draft's pk partition key, behind a switch: a digest of the key, never the key; off by default. */
  @Test void partitionKeysAreAHashOfTheKeyAndOnlyWhenSwitchedOn() {
    ManualTicker t = ManualTicker.at(T0);
    MemoryRateLimiter lim = MemoryRateLimiter.builder(Policy.fixedWindow("login", 1, Duration.ofSeconds(60))).ticker(t).build();
    Decision ok = lim.tryAcquire("user:42");
    String pk = ";pk=:" + java.util.Base64.getEncoder().encodeToString(
        java.util.HexFormat.of().parseHex(dev.sluice.kernel.Inputs.storedId("login", "user:42").substring(0, 32))) + ":";
    HttpVerdict on = HttpVerdict.of(ok, null, "user:42", t.nowMicros(), RateLimitHeaders.all().withPartitionKeys());
    assertThat(on.headers()).contains(h("RateLimit-Policy", "\"login\";q=1;w=60" + pk), h("RateLimit", "\"login\";r=0;t=60" + pk));
    assertThat(on.headers().toString()).doesNotContain("user:42");
    HttpVerdict refused = HttpVerdict.of(lim.tryAcquire("user:42"), null, "user:42", t.nowMicros(), RateLimitHeaders.all().withPartitionKeys());
    assertThat(refused.headers()).contains(h("RateLimit", "\"login\";r=0;t=60" + pk));
    assertThat(HttpVerdict.of(ok, null, "user:42", t.nowMicros(), RateLimitHeaders.all()).headers())
        .contains(h("RateLimit", "\"login\";r=0;t=60"));
    assertThat(pk).hasSize(";pk=::".length() + 24);
  }

  @Test void retryAfterIsRoundedUpInSecondsAndMillisecondsAndIsAtLeastOne() {
    Decision d = Decision.refused(API, Reason.LIMIT_EXCEEDED, 0, T0 + 1_000, 39_500_001);
    assertThat(HttpVerdict.retryAfterSeconds(d)).isEqualTo(40);
    assertThat(HttpVerdict.retryAfterMillis(d)).isEqualTo(39_501);
    Decision tiny = Decision.refused(API, Reason.LIMIT_EXCEEDED, 0, T0 + 1, 1);
    assertThat(HttpVerdict.retryAfterSeconds(tiny)).isEqualTo(1);
    assertThat(HttpVerdict.retryAfterMillis(tiny)).isEqualTo(1);
    Decision ok = Decision.allowed(API, 9, T0 + 60_000_000, null);
    assertThat(HttpVerdict.retryAfterSeconds(ok)).isZero();
    assertThat(HttpVerdict.retryAfterMillis(ok)).isZero();
  }

  @Test void anOutageIs503WithRetryAfterOnlyAndNoLimitFields() {
    Decision closed = FailureMode.closed().decide(API, "k", 1, Reason.STORE_UNAVAILABLE, null, T0);
    HttpVerdict v = HttpVerdict.of(closed, T0, RateLimitHeaders.all());
    assertThat(v.status()).isEqualTo(503);
    assertThat(v.headers()).containsExactly(h("Retry-After", "1"));
    assertThat(v.body()).isEqualTo("{\"type\":\"about:blank\",\"title\":\"Service Unavailable\",\"status\":503,"
        + "\"detail\":\"The rate limiter for policy 'api' could not decide (store_unavailable); this is not a limit you exceeded."
        + " Retry after 1 second.\",\"allowed\":false,\"reason\":\"store_unavailable\",\"path\":\"failure_mode\",\"policy\":\"api\","
        + "\"retryAfterSeconds\":1,\"retryAfterMillis\":1000}");
    // Even an outage reported on the primary path carries no limits.
    HttpVerdict primary = HttpVerdict.of(Decision.refused(API, Reason.CORRUPT_STATE, 3, T0 + 5_000_000, 2_000_000), T0, RateLimitHeaders.all());
    assertThat(primary.headers()).containsExactly(h("Retry-After", "2"));
    assertThat(primary.fields()).doesNotContainKeys("limit", "remaining", "resetAt", "path");
  }

  @Test void contentionIsLoadNotAnOutage() {
    Decision contended = FailureMode.closed().decide(API, "k", 1, Reason.CONTENTION, null, T0);
    HttpVerdict v = HttpVerdict.of(contended, T0, RateLimitHeaders.all());
    assertThat(v.status()).isEqualTo(429);
    assertThat(v.headers()).containsExactly(h("Retry-After", "1")); // no store answered: no limits to report
    assertThat(v.detail()).isEqualTo("Too many concurrent requests for one key under policy 'api'; retry after 1 second.");
    assertThat(v.fields()).containsExactly(Map.entry("allowed", false), Map.entry("reason", "contention"),
        Map.entry("path", "failure_mode"), Map.entry("policy", "api"), Map.entry("retryAfterSeconds", 1L),
        Map.entry("retryAfterMillis", 1000L));
  }

  @Test void allowedCarriesTheLimitHeadersAndFieldsButNoBody() {
    Decision ok = Decision.allowed(API, 9, T0 + 60_000_000, null);
    HttpVerdict v = HttpVerdict.of(ok, T0, RateLimitHeaders.all());
    assertThat(v.status()).isEqualTo(200);
    assertThat(v.allowed()).isTrue();
    assertThat(v.body()).isNull();
    assertThat(v.bodyBytes()).isNull();
    assertThat(v.detail()).isNull();
    assertThat(v.problem()).isEmpty();
    assertThat(v.headers()).extracting(HttpVerdict.Header::name)
        .containsExactly("RateLimit-Policy", "RateLimit", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset");
    assertThat(v.fields()).containsExactly(Map.entry("allowed", true), Map.entry("reason", "within_limit"),
        Map.entry("policy", "api"), Map.entry("limit", 10L), Map.entry("remaining", 9L),
        Map.entry("resetAt", "2023-11-14T22:14:20Z"), Map.entry("retryAfterSeconds", 0L), Map.entry("retryAfterMillis", 0L));
    Decision open = FailureMode.open((p, r, c) -> { }).decide(API, "k", 1, Reason.TIMEOUT, null, T0);
    HttpVerdict openVerdict = HttpVerdict.of(open, T0, RateLimitHeaders.all());
    assertThat(openVerdict.status()).isEqualTo(200);
    assertThat(openVerdict.headers()).isEmpty();
    assertThat(openVerdict.fields()).containsOnlyKeys("allowed", "reason", "path", "policy", "retryAfterSeconds", "retryAfterMillis");
  }

  @Test void theFirstRefusalOfClientAndCeilingDecides() {
    Policy ceiling = Policy.fixedWindow("ceiling", 100, Duration.ofSeconds(60));
    Decision client = Decision.allowed(API, 9, T0 + 60_000_000, null);
    Decision full = Decision.refused(ceiling, Reason.LIMIT_EXCEEDED, 0, T0 + 30_000_000, 30_000_000);
    HttpVerdict v = HttpVerdict.of(client, full, T0, RateLimitHeaders.all());
    assertThat(v.status()).isEqualTo(429);
    assertThat(v.fields().get("policy")).isEqualTo("ceiling");
    assertThat(v.headers()).contains(h("RateLimit-Policy", "\"ceiling\";q=100;w=60"));
    HttpVerdict both = HttpVerdict.of(client, Decision.allowed(ceiling, 50, T0 + 60_000_000, null), T0, RateLimitHeaders.all());
    assertThat(both.headers()).contains(h("RateLimit-Policy", "\"api\";q=10;w=60, \"ceiling\";q=100;w=60"));
    assertThat(both.fields().get("policy")).isEqualTo("api");
  }

  @Test void theGuardsRefusalRendersAsItsDecision() throws Exception {
    Decision d = Decision.refused(API, Reason.KEY_TABLE_FULL, 0, T0 + 3_000_000, 2_500_000);
    RateLimitExceededException e = new RateLimitExceededException(d);
    HttpVerdict v = HttpVerdict.of(e, T0, RateLimitHeaders.all());
    assertThat(v).isEqualTo(HttpVerdict.of(d, T0, RateLimitHeaders.all()));
    assertThat(v.detail()).isEqualTo("The rate limiter for policy 'api' is tracking as many clients as it can hold; retry after 3 seconds.");

    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(e);
    }
    RateLimitExceededException read;
    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
      read = (RateLimitExceededException) in.readObject();
    }
    assertThatThrownBy(() -> HttpVerdict.of(read, T0, RateLimitHeaders.all())).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("the RateLimitExceededException of policy 'api' carries no decision (it was deserialized);"
            + " render the exception where the guard threw it");
  }

  @Test void nullArgumentsAreRefusedByName() {
    Decision d = Decision.allowed(API, 9, T0, null);
    assertThatThrownBy(() -> HttpVerdict.of((Decision) null, T0, RateLimitHeaders.all())).hasMessage("decision is null");
    assertThatThrownBy(() -> HttpVerdict.of(d, T0, null)).hasMessage("headers is null");
    assertThatThrownBy(() -> HttpVerdict.of((RateLimitExceededException) null, T0, RateLimitHeaders.all())).hasMessage("refusal is null");
  }

  @Test void jsonStringsAreEscaped() {
    assertThat(HttpVerdict.json(new java.util.LinkedHashMap<>(Map.of("a", "q\"b\\s\n")))).isEqualTo("{\"a\":\"q\\\"b\\\\s\\u000a\"}");
    assertThat(HttpVerdict.json(new java.util.LinkedHashMap<>(Map.of("n", 1L)))).isEqualTo("{\"n\":1}");
    assertThat(List.of(Reason.LIMIT_EXCEEDED, Reason.KEY_TABLE_FULL).stream().map(dev.sluice.kernel.DecisionWords::of)).containsExactly("limit_exceeded", "key_table_full");
  }
}
