package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.Ticker;
import dev.sluice.kernel.Store;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The JSON API through a real Jetty and a real HTTP client, on the memory store with a manual clock. */
class ServerApiTest {
  static final String POLICIES = """
      policies:
        - name: login
          algorithm: fixed-window
          limit: 3
          window: 1m
        - name: api
          algorithm: token-bucket
          capacity: 10
          refill-tokens: 5
          refill-period: 1s
        - name: search
          algorithm: gcra
          rate: 2
          period: 1s
          burst: 4
      """;
  static final long T0 = 1_800_000_000_000_000L; // 2027-01-15T08:00:00Z, a whole second
  static final ObjectMapper JSON = new ObjectMapper();

  ManualTicker ticker;
  SluiceServer server;
  Http http;

  @BeforeEach void start() throws Exception {
    ticker = ManualTicker.at(T0);
    List<Policy> policies = PolicyFile.parse(POLICIES, "test");
    server = new SluiceServer(policies, Store.memory(1000, ticker), "127.0.0.1", 0, Duration.ofSeconds(5), ticker, 4).start();
    http = new Http(server.uri());
  }

  @AfterEach void stop() throws Exception {
    server.stop();
  }

  static JsonNode json(HttpResponse<String> r) {
    try {
      return JSON.readTree(r.body());
    } catch (Exception e) {
      throw new AssertionError("not JSON: " + r.body(), e);
    }
  }

  static String header(HttpResponse<String> r, String name) {
    return r.headers().firstValue(name).orElse(null);
  }

  HttpResponse<String> acquire(String policy, String key, int permits) {
    return http.post("/v1/acquire", "{\"policy\":\"" + policy + "\",\"key\":\"" + key + "\",\"permits\":" + permits + "}");
  }

  @Test void acquireAllowsWithinTheLimitWithTheFilterHeaders() {
    HttpResponse<String> r = acquire("login", "alice", 1);
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(header(r, "Content-Type")).startsWith("application/json");
    assertThat(header(r, "RateLimit-Policy")).isEqualTo("\"login\";q=3;w=60");
    assertThat(header(r, "RateLimit")).isEqualTo("\"login\";r=2;t=60");
    assertThat(header(r, "X-RateLimit-Limit")).isEqualTo("3");
    assertThat(header(r, "X-RateLimit-Remaining")).isEqualTo("2");
    assertThat(header(r, "X-RateLimit-Reset")).isEqualTo(Long.toString(T0 / 1_000_000 + 60));
    assertThat(header(r, "Retry-After")).isNull();
    JsonNode b = json(r);
    assertThat(b.get("allowed").booleanValue()).isTrue();
    assertThat(b.get("reason").textValue()).isEqualTo("within_limit");
    assertThat(b.get("policy").textValue()).isEqualTo("login");
    assertThat(b.get("limit").longValue()).isEqualTo(3);
    assertThat(b.get("remaining").longValue()).isEqualTo(2);
    assertThat(b.get("resetAt").textValue()).isEqualTo("2027-01-15T08:01:00Z");
    assertThat(b.get("retryAfterSeconds").longValue()).isZero();
    assertThat(b.get("retryAfterMillis").longValue()).isZero();
    assertThat(b.get("ticket").textValue()).matches("[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+");
  }

  @Test void permitsDefaultToOneAndAKeyIsIndependentOfOthers() {
    assertThat(json(http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"bob\"}")).get("remaining").longValue()).isEqualTo(2);
    assertThat(json(acquire("login", "bob", 2)).get("remaining").longValue()).isZero();
    assertThat(json(acquire("login", "carol", 1)).get("remaining").longValue()).isEqualTo(2);
  }

  @Test void refusalIs429WithRetryAfterAndLimitHeaders() {
    acquire("login", "alice", 3);
    ticker.advance(Duration.ofMillis(20_500));
    HttpResponse<String> r = acquire("login", "alice", 1);
    assertThat(r.statusCode()).isEqualTo(429);
    assertThat(header(r, "Retry-After")).isEqualTo("40"); // 39.5 s rounded up
    assertThat(header(r, "RateLimit")).isEqualTo("\"login\";r=0;t=40");
    assertThat(header(r, "X-RateLimit-Remaining")).isEqualTo("0");
    assertThat(header(r, "Content-Type")).isEqualTo("application/problem+json");
    // The RFC 9457 problem the HTTP filters send, with the decision's fields.
    assertThat(r.body()).isEqualTo("{\"type\":\"about:blank\",\"title\":\"Too Many Requests\",\"status\":429,"
        + "\"detail\":\"Rate limit of policy 'login' exceeded; retry after 40 seconds.\",\"allowed\":false,"
        + "\"reason\":\"limit_exceeded\",\"policy\":\"login\",\"limit\":3,\"remaining\":0,"
        + "\"resetAt\":\"2027-01-15T08:01:00Z\",\"retryAfterSeconds\":40,\"retryAfterMillis\":39500}");
    ticker.advance(Duration.ofMillis(39_500));
    assertThat(acquire("login", "alice", 1).statusCode()).isEqualTo(200);
  }

  @Test void refundGivesPermitsBackOnceAndTicketsCannotBeForgedOrAltered() {
    String ticket = json(acquire("login", "alice", 3)).get("ticket").textValue();
    assertThat(acquire("login", "alice", 1).statusCode()).isEqualTo(429);

    HttpResponse<String> r = http.post("/v1/refund", "{\"ticket\":\"" + ticket + "\"}");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(json(r).get("result").textValue()).isEqualTo("applied");
    assertThat(json(r).get("permits").longValue()).isEqualTo(3);
    assertThat(json(acquire("login", "alice", 3)).get("allowed").booleanValue()).isTrue();

    HttpResponse<String> again = http.post("/v1/refund", "{\"ticket\":\"" + ticket + "\"}");
    assertThat(again.statusCode()).isEqualTo(200);
    assertThat(json(again).get("result").textValue()).isEqualTo("no_effect");
    assertThat(json(again).get("detail").textValue()).contains("already refunded");
    assertThat(acquire("login", "alice", 1).statusCode()).isEqualTo(429);

    // Forged: signed with another secret. Altered: another key under the genuine signature.
    String forged = new TicketCodec().encode("login", "mallory", 3, T0, T0, "0123456789abcdef0123456789abcdef");
    String altered = forged.substring(0, forged.indexOf('.')) + ticket.substring(ticket.indexOf('.'));
    for (String bad : List.of(forged, altered, "nonsense", ticket + "x", "a.b.c")) {
      HttpResponse<String> f = http.post("/v1/refund", "{\"ticket\":\"" + bad + "\"}");
      assertThat(f.statusCode()).as(bad).isEqualTo(400);
      assertThat(json(f).get("error").textValue()).isEqualTo("bad_request");
      assertThat(json(f).get("message").textValue()).startsWith("ticket ");
    }
  }

  /**
   * Issue 17.4: the memory store's tickets carry the key (its tier is keyed by it), so the key's
   * bound is what bounds them: the longest key allowed, in 3-byte characters, still refunds.
   */
  @Test void theLongestMemoryStoreKeyStillGetsARefundableTicket() throws Exception {
    ManualTicker t = ManualTicker.at(T0);
    int longest = TicketCodec.MAX_MEMORY_KEY_LENGTH;
    try (SluiceServer s = new SluiceServer(PolicyFile.parse(POLICIES, "test"), Store.memory(1000, longest, t), "127.0.0.1", 0,
        Duration.ofSeconds(5), t, 4).start()) {
      Http h = new Http(s.uri());
      String key = "\u20ac".repeat(longest);
      String ticket = json(h.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"" + key + "\",\"permits\":3}")).get("ticket").textValue();
      HttpResponse<String> refund = h.post("/v1/refund", "{\"ticket\":\"" + ticket + "\"}");
      assertThat(refund.statusCode()).as(refund.body()).isEqualTo(200);
      assertThat(json(refund).get("result").textValue()).isEqualTo("applied");
    }
    assertThatThrownBy(() -> ServeCommand.checkMemory(1000, longest + 1)).hasMessage("--max-key-length 16001 exceeds 16000, the longest key"
        + " whose refund ticket fits a request body; for longer keys use --redis or --postgres, which hash keys");
  }

  @Test void refundAfterTheWindowRolledOrTheTicketExpiredDoesNothing() {
    String ticket = json(acquire("login", "dave", 2)).get("ticket").textValue();
    ticker.advance(Duration.ofSeconds(61));
    JsonNode b = json(http.post("/v1/refund", "{\"ticket\":\"" + ticket + "\"}"));
    assertThat(b.get("result").textValue()).isEqualTo("no_effect");
    assertThat(b.get("detail").textValue()).contains("expired");
  }

  /** Issue 19: POST /v1/settle charges a ticket's actual cost, once; bad actuals are 400 and leave the ticket usable. */
  @Test void settleChargesTheActualCostOnceAndBadActualsAreRefused() {
    String ticket = json(acquire("api", "llm", 6)).get("ticket").textValue();
    for (String bad : List.of("-1", "11", "\"2\"", "2.5")) {
      HttpResponse<String> f = http.post("/v1/settle", "{\"ticket\":\"" + ticket + "\",\"actual\":" + bad + "}");
      assertThat(f.statusCode()).as(bad).isEqualTo(400);
      assertThat(json(f).get("message").textValue()).as(bad).startsWith("actual ");
    }
    assertThat(json(http.post("/v1/settle", "{\"ticket\":\"" + ticket + "\",\"actual\":-1}")).get("message").textValue())
        .isEqualTo("actual permits -1 is below 0; settle at the cost the work had, 0 when it cost nothing");
    assertThat(http.post("/v1/settle", "{\"ticket\":\"" + ticket + "\"}").statusCode()).isEqualTo(400);

    HttpResponse<String> r = http.post("/v1/settle", "{\"ticket\":\"" + ticket + "\",\"actual\":2}");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(json(r).get("result").textValue()).isEqualTo("applied");
    assertThat(json(r).get("permits").longValue()).isEqualTo(6);
    assertThat(json(r).get("actual").longValue()).isEqualTo(2);
    assertThat(json(http.get("/v1/peek?policy=api&key=llm")).get("remaining").longValue()).isEqualTo(8);
    assertThat(json(http.post("/v1/settle", "{\"ticket\":\"" + ticket + "\",\"actual\":0}")).get("result").textValue())
        .isEqualTo("no_effect");
    assertThat(json(http.post("/v1/refund", "{\"ticket\":\"" + ticket + "\"}")).get("result").textValue()).isEqualTo("no_effect");

    String small = json(acquire("api", "llm", 1)).get("ticket").textValue();
    JsonNode over = json(http.post("/v1/settle", "{\"ticket\":\"" + small + "\",\"actual\":10}"));
    assertThat(over.get("result").textValue()).isEqualTo("applied");
    assertThat(over.get("detail").textValue()).isEqualTo("overrun charged");
    assertThat(acquire("api", "llm", 1).statusCode()).as("8 - 10 = 2 tokens in debt").isEqualTo(429);
  }

  @Test void bucketRefundGoesBackUntilFull() {
    String ticket = json(acquire("api", "t1", 4)).get("ticket").textValue();
    assertThat(json(acquire("api", "t1", 1)).get("remaining").longValue()).isEqualTo(5);
    assertThat(json(http.post("/v1/refund", "{\"ticket\":\"" + ticket + "\"}")).get("result").textValue()).isEqualTo("applied");
    assertThat(json(http.get("/v1/peek?policy=api&key=t1")).get("remaining").longValue()).isEqualTo(9);
  }

  @Test void spentSetIsBoundedAndRefusesRatherThanForgetting() {
    // The server remembers at most 4 spent tickets (see start()).
    for (int i = 0; i < 4; i++) {
      String t = json(acquire("api", "k" + i, 1)).get("ticket").textValue();
      assertThat(json(http.post("/v1/refund", "{\"ticket\":\"" + t + "\"}")).get("result").textValue()).isEqualTo("applied");
    }
    String fifth = json(acquire("api", "k9", 1)).get("ticket").textValue();
    HttpResponse<String> r = http.post("/v1/refund", "{\"ticket\":\"" + fifth + "\"}");
    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(json(r).get("result").textValue()).isEqualTo("failed");
    assertThat(http.get("/metrics").body()).contains("sluice_server_refunds_total{policy=\"api\",result=\"failed\"} 1.0")
        .contains("sluice_server_refunds_total{policy=\"api\",result=\"applied\"} 4.0");
    // Once the remembered tickets expire (api refills fully in 2 s), there is room again.
    ticker.advance(Duration.ofSeconds(3));
    String sixth = json(acquire("api", "k9", 1)).get("ticket").textValue();
    assertThat(json(http.post("/v1/refund", "{\"ticket\":\"" + sixth + "\"}")).get("result").textValue()).isEqualTo("applied");
  }

  @Test void peekChargesNothing() {
    acquire("search", "u", 3);
    for (int i = 0; i < 3; i++) {
      HttpResponse<String> r = http.get("/v1/peek?policy=search&key=u");
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(json(r).get("remaining").longValue()).isEqualTo(1);
      assertThat(json(r).has("ticket")).isFalse();
      assertThat(header(r, "RateLimit-Policy")).isEqualTo("\"search\";q=4;w=2");
    }
    assertThat(http.get("/v1/peek?policy=search&key=nobody%20here").statusCode()).isEqualTo(200);
  }

  /** Issue 17.7: a bucket's 429 said Retry-After: 1 with RateLimit r=0;t=2 (full again), not when the next permit fits. */
  @Test void aTokenBucketRefusalsTIsItsRetryAfter() {
    assertThat(acquire("api", "bucket", 10).statusCode()).isEqualTo(200);
    HttpResponse<String> r = acquire("api", "bucket", 1);
    assertThat(r.statusCode()).isEqualTo(429);
    assertThat(header(r, "Retry-After")).isEqualTo("1");
    assertThat(header(r, "RateLimit")).isEqualTo("\"api\";r=0;t=1");
    assertThat(header(r, "X-RateLimit-Reset")).isEqualTo(Long.toString(T0 / 1_000_000 + 1));
  }

  /** Issue 17.7: --partition-keys adds the draft's pk, a digest of the key, to the service's IETF headers. */
  @Test void partitionKeysBehindTheirSwitch() {
    assertThat(header(acquire("login", "pk-user", 1), "RateLimit")).isEqualTo("\"login\";r=2;t=60");
    server.partitionKeys(true);
    HttpResponse<String> r = acquire("login", "pk-user", 1);
    assertThat(header(r, "RateLimit")).matches("\"login\";r=1;t=60;pk=:[A-Za-z0-9+/]{22}==:");
    assertThat(header(r, "RateLimit-Policy")).endsWith(header(r, "RateLimit").substring(header(r, "RateLimit").indexOf(";pk=")));
    assertThat(r.headers().map().toString()).doesNotContain("pk-user");
  }

  @Test void policiesHealthAndMetrics() {
    JsonNode p = json(http.get("/v1/policies"));
    assertThat(p.get("store").textValue()).isEqualTo("memory");
    assertThat(p.get("policies")).hasSize(3);
    assertThat(p.get("policies").get(1).toString())
        .isEqualTo("{\"name\":\"api\",\"algorithm\":\"token-bucket\",\"capacity\":10,\"refill-tokens\":5,\"refill-period\":\"1s\"}");
    HttpResponse<String> h = http.get("/healthz");
    assertThat(h.statusCode()).isEqualTo(200);
    assertThat(h.body()).isEqualTo("{\"status\":\"up\",\"store\":\"memory\"}");
    assertThat(http.get("/readyz").body()).isEqualTo("{\"status\":\"ready\",\"store\":\"memory\"}");

    acquire("login", "m", 3);
    acquire("login", "m", 1);
    HttpResponse<String> m = http.get("/metrics");
    assertThat(m.statusCode()).isEqualTo(200);
    assertThat(header(m, "Content-Type")).startsWith("text/plain");
    assertThat(m.body())
        .contains("sluice_decisions_total{outcome=\"allowed\",policy=\"login\",reason=\"within_limit\"} 1.0")
        .contains("sluice_decisions_total{outcome=\"refused\",policy=\"login\",reason=\"limit_exceeded\"} 1.0")
        .contains("sluice_keys_tracked{limiter=\"login\"} 1.0")
        .contains("sluice_server_requests_seconds_count{endpoint=\"acquire\"} 2");
  }

  /** Issue 17.9: /metrics had sluice_* only; the JVM, the process and Jetty's requests and threads are beside them. */
  @Test void metricsHaveTheJvmTheProcessAndJettyBesideSluice() {
    acquire("login", "jvm", 1);
    http.get("/v1/nowhere");
    String m = http.get("/metrics").body();
    assertThat(m).contains("jvm_memory_used_bytes{area=\"heap\"", "jvm_gc_", "jvm_threads_live_threads", "jvm_classes_loaded_classes",
        "process_cpu_usage", "process_uptime_seconds", "process_files_open_files", "system_cpu_count",
        "jetty_threads_current", "jetty_threads_busy", "jetty_threads_config_max 64.0", "jetty_threads_jobs",
        "http_server_requests_seconds_count{method=\"POST\",status=\"200\"} 1",
        "http_server_requests_seconds_count{method=\"GET\",status=\"404\"} 1");
    assertThat(http.send(HttpRequest.newBuilder(server.uri().resolve("/x")).method("BREW", HttpRequest.BodyPublishers.noBody()))
        .statusCode()).isEqualTo(404);
    assertThat(http.get("/metrics").body()).contains("http_server_requests_seconds_count{method=\"other\",status=\"404\"} 1")
        .doesNotContain("BREW");
  }

  /**
   * Issue 12 (found failing by chance): the 413 went out before the body was read, the connection
   * closed under the client still sending, and the client saw no response at all.
   */
  @Test void anOversizedBodyAlwaysGetsItsAnswerNotAResetConnection() {
    for (int i = 0; i < 50; i++) {
      HttpResponse<String> big = http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"" + "k".repeat(70_000 + i) + "\"}");
      assertThat(big.statusCode()).as("attempt %d", i).isEqualTo(413);
    }
  }

  @Test void badRequestsGet400WithWhatWasWrong() {
    assertBad(http.post("/v1/acquire", "{\"policy\":\"nope\",\"key\":\"a\"}"),
        "policy \"nope\" is not configured; configured policies: api, login, search");
    assertBad(http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"   \"}"),
        "key \"   \" is blank; a key must contain a non-whitespace character (whitespace inside a key is kept)");
    assertBad(http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"\"}"), "key is empty; a key must be a non-blank string");
    assertBad(http.post("/v1/acquire", "{\"policy\":\"login\"}"), "key is missing");
    assertBad(http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":42}"), "key must be a JSON string, not 42");
    assertBad(acquire("login", "a", 0), "permits 0 is below 1; ask for at least one permit");
    assertBad(acquire("login", "a", 4),
        "permits 4 exceeds 3, the most policy 'login' can ever grant at once; such a request could never be allowed");
    assertBad(http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"a\",\"permits\":\"two\"}"),
        "permits \"two\" is not a whole number; give a whole number from 1 to 3, or leave it out for 1");
    assertBad(http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"a\",\"permits\":1.5}"),
        "permits 1.5 is not a whole number; give a whole number from 1 to 3, or leave it out for 1");
    assertBad(http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"a\",\"permit\":1}"),
        "unknown field \"permit\"; acquire takes policy, key and permits");
    assertBad(http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":"),
        "request body is not valid JSON (line 1, column 25): Unexpected end-of-input within/between Object entries");
    assertBad(http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"a\"} trailing"), null);
    assertBad(http.post("/v1/acquire", "[1,2]"), "request body must be a JSON object (acquire takes policy, key and permits)");
    assertBad(http.post("/v1/acquire", ""), "request body is empty; send a JSON object (acquire takes policy, key and permits)");
    assertBad(http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"a\\ud800\"}"),
        "key \"a\\ud800\" has an unpaired UTF-16 surrogate at index 1; a key must be well-formed Unicode so that distinct keys hash to distinct ids");
    assertBad(http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"" + "k".repeat(600) + "\"}"),
        "key \"" + "k".repeat(64) + "\"...(600 chars) is 600 UTF-16 code units long; the memory tier accepts at most 512"
            + " (maxKeyLength): shorten or hash the key, or raise maxKeyLength");
    assertBad(http.post("/v1/refund", "{}"), "ticket is missing");
    assertBad(http.get("/v1/peek?policy=login"), "query parameter 'key' is missing; use GET /v1/peek?policy=NAME&key=KEY");
    assertBad(http.get("/v1/peek?policy=zzz&key=a"), "policy \"zzz\" is not configured; configured policies: api, login, search");

    HttpResponse<String> big = http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"" + "k".repeat(70_000) + "\"}");
    assertThat(big.statusCode()).isEqualTo(413);
    assertThat(json(big).get("error").textValue()).isEqualTo("payload_too_large");

    HttpResponse<String> notFound = http.get("/v2/acquire");
    assertThat(notFound.statusCode()).isEqualTo(404);
    assertThat(json(notFound).get("error").textValue()).isEqualTo("not_found");
    HttpResponse<String> wrongMethod = http.get("/v1/acquire");
    assertThat(wrongMethod.statusCode()).isEqualTo(405);
    assertThat(header(wrongMethod, "Allow")).isEqualTo("POST");
    HttpResponse<String> delete = http.send(HttpRequest.newBuilder(server.uri().resolve("/v1/policies")).DELETE());
    assertThat(delete.statusCode()).isEqualTo(405);
    assertThat(header(delete, "Allow")).isEqualTo("GET");
  }

  /**
   * Issue 17.8: a body without Content-Type: application/json was parsed anyway, a repeated field
   * silently took its last value (a way to smuggle a policy past a proxy that read the first), and
   * permits 1e30 was "not a whole number".
   */
  @Test void strictInputJsonOnlyEachFieldOnceAndHugePermitsTooLarge() {
    String body = "{\"policy\":\"login\",\"key\":\"strict\"}";
    HttpResponse<String> untyped = http.send(HttpRequest.newBuilder(server.uri().resolve("/v1/acquire"))
        .POST(HttpRequest.BodyPublishers.ofString(body)));
    assertThat(untyped.statusCode()).isEqualTo(415);
    assertThat(untyped.body()).isEqualTo("{\"error\":\"unsupported_media_type\",\"message\":\"Content-Type is missing;"
        + " send the body as JSON with Content-Type: application/json\"}");
    HttpResponse<String> form = http.send(HttpRequest.newBuilder(server.uri().resolve("/v1/refund"))
        .header("Content-Type", "application/x-www-form-urlencoded").POST(HttpRequest.BodyPublishers.ofString("{\"ticket\":\"x\"}")));
    assertThat(form.statusCode()).isEqualTo(415);
    assertThat(json(form).get("message").textValue()).isEqualTo("Content-Type \"application/x-www-form-urlencoded\" is not supported;"
        + " send the body as JSON with Content-Type: application/json");
    HttpResponse<String> latin1 = http.send(HttpRequest.newBuilder(server.uri().resolve("/v1/acquire"))
        .header("Content-Type", "application/json; charset=ISO-8859-1").POST(HttpRequest.BodyPublishers.ofString(body)));
    assertThat(latin1.statusCode()).isEqualTo(415);
    HttpResponse<String> utf8 = http.send(HttpRequest.newBuilder(server.uri().resolve("/v1/acquire"))
        .header("Content-Type", "Application/JSON; charset=\"UTF-8\"").POST(HttpRequest.BodyPublishers.ofString(body)));
    assertThat(utf8.statusCode()).as(utf8.body()).isEqualTo(200);

    assertBad(http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"a\",\"policy\":\"api\"}"),
        "field \"policy\" appears twice (line 1, column 37); give each field once");
    assertBad(http.post("/v1/refund", "{\"ticket\":\"a\",\"ticket\":\"b\"}"),
        "field \"ticket\" appears twice (line 1, column 23); give each field once");

    assertBad(http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"a\",\"permits\":1e30}"),
        "permits 1E+30 exceeds 3, the most policy 'login' can ever grant at once; such a request could never be allowed");
    assertBad(http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"a\",\"permits\":18446744073709551616}"),
        "permits 18446744073709551616 exceeds 3, the most policy 'login' can ever grant at once; such a request could never be allowed");
    assertBad(http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"a\",\"permits\":-1e30}"),
        "permits -1E+30 is below 1; ask for at least one permit");
    assertBad(http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"a\",\"permits\":1e-30}"),
        "permits 1E-30 is not a whole number; give a whole number from 1 to 3, or leave it out for 1");
    assertThat(http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"a\",\"permits\":2.0}").statusCode())
        .as("2.0 is the whole number 2").isEqualTo(200);
  }

  @Test void malformedHttpAndQueriesGetJsonErrorsToo() throws Exception {
    String badLength = raw("POST /v1/acquire HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n");
    assertThat(badLength).startsWith("HTTP/1.1 400 ").contains("Content-Type: application/json")
        .endsWith("{\"error\":\"bad_request\",\"message\":\"Invalid Content-Length Value\"}");
    String badUtf8 = raw("GET /v1/peek?policy=login&key=%ED%A0%80 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assertThat(badUtf8).startsWith("HTTP/1.1 400 ").endsWith("{\"error\":\"bad_request\",\"message\":\"query string is malformed;"
        + " percent-encode each byte of UTF-8 (%XX) and keep '&' and '=' as separators\"}");
  }

  /** Sends {@code request} as raw bytes (what a client library would refuse to send) and reads the whole answer. */
  private String raw(String request) throws Exception {
    try (java.net.Socket s = new java.net.Socket("127.0.0.1", server.port())) {
      s.setSoTimeout(10_000);
      s.getOutputStream().write(request.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
      s.getOutputStream().flush();
      return new String(s.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    }
  }

  private static void assertBad(HttpResponse<String> r, String message) {
    assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
    assertThat(header(r, "Content-Type")).startsWith("application/json");
    assertThat(header(r, "RateLimit")).isNull();
    JsonNode b = json(r);
    assertThat(b.get("error").textValue()).isEqualTo("bad_request");
    if (message != null) {
      assertThat(b.get("message").textValue()).isEqualTo(message);
    }
    assertThat(r.body()).doesNotContain("Exception").doesNotContain("\tat ").doesNotContain("dev.sluice.");
  }

  @Test void stopDrainsARequestInFlightAndThenRefusesConnections() throws Exception {
    String body = "{\"policy\":\"login\",\"key\":\"slow\"}";
    int port = server.port();
    try (java.net.Socket socket = new java.net.Socket("127.0.0.1", port)) {
      socket.setSoTimeout(10_000);
      java.io.OutputStream out = socket.getOutputStream();
      out.write(("POST /v1/acquire HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: "
          + body.length() + "\r\n\r\n" + body.substring(0, 10)).getBytes(java.nio.charset.StandardCharsets.US_ASCII));
      out.flush();
      awaitTrue(() -> server.requestsInFlight() == 1);

      java.util.concurrent.CompletableFuture<Void> stopped = java.util.concurrent.CompletableFuture.runAsync(() -> {
        try {
          server.stop();
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      });
      // The stop waits for the request: it cannot finish while the body is still arriving.
      awaitTrue(() -> !acceptsConnections(port));
      assertThat(stopped).isNotDone();

      out.write(body.substring(10).getBytes(java.nio.charset.StandardCharsets.US_ASCII));
      out.flush();
      String response = new String(socket.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
      assertThat(response).startsWith("HTTP/1.1 200 OK").contains("\"allowed\":true");
      stopped.get(10, java.util.concurrent.TimeUnit.SECONDS);
    }
    assertThat(acceptsConnections(port)).isFalse();
  }

  private static boolean acceptsConnections(int port) {
    try (java.net.Socket s = new java.net.Socket("127.0.0.1", port)) {
      return true;
    } catch (java.io.IOException e) {
      return false;
    }
  }

  static void awaitTrue(java.util.function.BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime()).as("condition not met within 10 s").isLessThan(deadline);
      Thread.sleep(5); // polling a condition with a deadline, not waiting for time to pass
    }
  }
}
