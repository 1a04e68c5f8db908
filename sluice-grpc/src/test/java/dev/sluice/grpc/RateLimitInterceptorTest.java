package dev.sluice.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.RetryInfo;
import dev.sluice.Decision;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.http.HttpVerdict;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.memory.MemoryRateLimiter;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.time.Duration;
import java.util.List;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/** The interceptor over memory limiters, on a real Netty server and channel (loopback). */
class RateLimitInterceptorTest {
  private static final long T0 = 1_700_000_000_000_000L;

  private final ManualTicker ticker = ManualTicker.at(T0);

  private RateLimiter limiter(String name, long limit) {
    return MemoryRateLimiter.builder(Policy.fixedWindow(name, limit, Duration.ofMinutes(1))).ticker(ticker).build();
  }

  private static Duration retryDelay(StatusRuntimeException e) throws InvalidProtocolBufferException {
    com.google.rpc.Status detail = StatusProto.fromThrowable(e);
    assertThat(detail).as("google.rpc.Status in grpc-status-details-bin").isNotNull();
    assertThat(detail.getCode()).isEqualTo(e.getStatus().getCode().value());
    for (Any any : detail.getDetailsList()) {
      if (any.is(RetryInfo.class)) {
        com.google.protobuf.Duration d = any.unpack(RetryInfo.class).getRetryDelay();
        return Duration.ofSeconds(d.getSeconds(), d.getNanos());
      }
    }
    throw new AssertionError("no RetryInfo in " + detail);
  }

  @Test void aRefusedUnaryCallCarriesRetryInfoAndSucceedsAfterWaitingExactlyThatLong() throws Exception {
    RateLimiter api = limiter("api", 2);
    try (Echo echo = new Echo(RateLimitInterceptor.builder().limit("test.Echo/*", api).build())) {
      assertThat(echo.say("a")).isEqualTo("hi a"); // opens the client's minute
      ticker.advanceMicros(15_000_000); // 15 s into it: the window ends in 45 s
      assertThat(echo.say("b")).isEqualTo("hi b");
      StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class, () -> echo.say("c"));
      assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
      assertThat(refused.getStatus().getDescription()).contains("Rate limit of policy 'api' exceeded");
      Duration wait = retryDelay(refused);
      assertThat(wait).isEqualTo(Duration.ofSeconds(45));

      ticker.advance(wait.minusNanos(1_000)); // one microsecond early: still refused
      assertThat(code(() -> echo.say("d"))).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
      ticker.advanceMicros(1); // exactly the wait it was told
      assertThat(echo.say("e")).isEqualTo("hi e");
    }
  }

  @Test void serverStreamingCallsAreLimitedToo() throws Exception {
    RateLimiter api = limiter("stream", 1);
    try (Echo echo = new Echo(RateLimitInterceptor.builder().limit("test.Echo/Count", api).build())) {
      assertThat(echo.count("n")).containsExactly("n1", "n2", "n3");
      assertThat(Echo.get(echo.headers.get(), "ratelimit")).isEqualTo("\"stream\";r=0;t=60");
      StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class, () -> echo.count("m"));
      assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
      assertThat(retryDelay(refused)).isEqualTo(Duration.ofMinutes(1));
      assertThat(echo.say("other method")).isEqualTo("hi other method"); // the rule names Count only
    }
  }

  @Test void theLimitFieldsAreResponseMetadataAsTheHttpFiltersRenderThem() throws Exception {
    RateLimiter api = limiter("api", 2);
    try (Echo echo = new Echo(RateLimitInterceptor.builder().limit(api).build())) {
      echo.say("a");
      Metadata h = echo.headers.get();
      assertThat(Echo.get(h, "ratelimit-policy")).isEqualTo("\"api\";q=2;w=60");
      assertThat(Echo.get(h, "ratelimit")).isEqualTo("\"api\";r=1;t=60");
      assertThat(Echo.get(h, "x-ratelimit-limit")).isEqualTo("2");
      assertThat(Echo.get(h, "x-ratelimit-remaining")).isEqualTo("1");
      assertThat(Echo.get(h, "x-ratelimit-reset")).isEqualTo(Long.toString(T0 / 1_000_000 + 60));
      assertThat(Echo.get(h, "retry-after")).isNull();

      echo.say("b");
      StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class, () -> echo.say("c"));
      Metadata t = refused.getTrailers();
      // The same decision through the HTTP verdict: the same fields under the same names.
      HttpVerdict http = HttpVerdict.of(refusedDecision(), null, ticker.nowMicros(), RateLimitHeaders.all());
      for (HttpVerdict.Header header : http.headers()) {
        assertThat(Echo.get(t, header.name().toLowerCase(java.util.Locale.ROOT))).as(header.name()).isEqualTo(header.value());
      }
      assertThat(http.headers()).extracting(HttpVerdict.Header::name).contains("Retry-After", "RateLimit", "X-RateLimit-Reset");
      assertThat(Echo.get(t, "retry-after")).isEqualTo("60");
    }
  }

  /** What the interceptor's limiter decided for the third call above, decided again on a fresh limiter at the same instant. */
  private Decision refusedDecision() {
    RateLimiter fresh = limiter("api", 2);
    fresh.tryAcquire("k", 2);
    return fresh.tryAcquire("k");
  }

  @Test void theMostSpecificRuleDecidesAndUnnamedCallsPassUnlimited() throws Exception {
    RateLimiter say = limiter("say", 1);
    RateLimiter echoService = limiter("echo", 5);
    RateLimiter everything = limiter("all", 1);
    RateLimitInterceptor limits = RateLimitInterceptor.builder().limit("test.Echo/Say", say).limit("test.Echo/*", echoService).build();
    assertThat(limits.limiterFor("test.Echo/Say")).isSameAs(say);
    assertThat(limits.limiterFor("test.Echo/Count")).isSameAs(echoService);
    assertThat(limits.limiterFor("test.Other/Free")).isNull();
    try (Echo echo = new Echo(limits)) {
      echo.say("a");
      assertThat(code(() -> echo.say("b"))).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
      assertThat(echo.count("c")).hasSize(3);
      for (int i = 0; i < 5; i++) {
        assertThat(echo.free("f" + i)).isEqualTo("free f" + i);
      }
      assertThat(echo.headers.get().keys()).doesNotContain("ratelimit");
    }
    RateLimitInterceptor star = RateLimitInterceptor.builder().limit("test.Echo/Say", say).limit(everything).build();
    assertThat(star.limiterFor("test.Other/Free")).isSameAs(everything);
  }

  @Test void aKeyFromMetadataGivesEachClientItsOwnBudgetAndCallsWithoutOneShareTheUnknownKey() throws Exception {
    RateLimiter api = limiter("api", 1);
    try (Echo echo = new Echo(RateLimitInterceptor.builder().limit(api).keyFromHeader("x-api-key").build())) {
      assertThat(echo.say(Echo.header("x-api-key", "alice"), "a")).isEqualTo("hi a");
      assertThat(echo.say(Echo.header("x-api-key", "bob"), "b")).isEqualTo("hi b");
      assertThatThrownBy(() -> echo.say(Echo.header("x-api-key", "alice"), "again")).isInstanceOf(StatusRuntimeException.class);
      assertThat(api.peek("header:x-api-key:alice").remaining()).isZero();
      echo.say("no key");
      assertThat(api.peek("unknown").remaining()).isZero();
      assertThat(code(() -> echo.say("still none"))).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    }
  }

  @Test void theDefaultKeyIsThePeerAndAFunctionSeesMethodMetadataAndAttributes() throws Exception {
    RateLimiter byPeer = limiter("peer", 5);
    try (Echo echo = new Echo(RateLimitInterceptor.builder().limit(byPeer).build())) {
      echo.say("a");
      assertThat(byPeer.peek("ip:127.0.0.1").remaining()).isEqualTo(4);
    }
    RateLimiter byFunction = limiter("fn", 5);
    RateLimitInterceptor limits = RateLimitInterceptor.builder().limit(byFunction)
        .key((method, headers, attributes) -> "tenant:" + Echo.get(headers, "x-tenant") + "|" + method.getBareMethodName()
            + "|" + (attributes.get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR) != null))
        .build();
    try (Echo echo = new Echo(limits)) {
      echo.say(Echo.header("x-tenant", "acme"), "a");
      assertThat(byFunction.peek("tenant:acme|Say|true").remaining()).isEqualTo(4);
    }
  }

  @Test void severalLimitersAreChargedAllOrNone() throws Exception {
    RateLimiter burst = limiter("burst", 1);
    RateLimiter hourly = limiter("hourly", 10);
    try (Echo echo = new Echo(RateLimitInterceptor.builder().limit("test.Echo/Say", burst, hourly).build())) {
      echo.say("a");
      assertThat(code(() -> echo.say("b"))).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
      assertThat(hourly.peek("ip:127.0.0.1").remaining()).as("the refused call left no charge on the other leg").isEqualTo(9);
    }
  }

  @Test void aCallEndingWithANamedStatusGivesItsPermitBackOnce() throws Exception {
    RateLimiter api = limiter("api", 1);
    try (Echo echo = new Echo(RateLimitInterceptor.builder().limit(api).refundOn(Status.Code.INTERNAL, Status.Code.UNKNOWN).build())) {
      for (int i = 0; i < 3; i++) {
        assertThat(code(() -> echo.say("fail:INTERNAL"))).isEqualTo(Status.Code.INTERNAL);
        awaitTrue("the INTERNAL call's permit is back", () -> api.peek("ip:127.0.0.1").remaining() == 1);
      }
      assertThat(code(() -> echo.say("throw"))).isEqualTo(Status.Code.UNKNOWN);
      awaitTrue("the throwing call's permit is back", () -> api.peek("ip:127.0.0.1").remaining() == 1);
      assertThat(code(() -> echo.say("fail:NOT_FOUND"))).isEqualTo(Status.Code.NOT_FOUND); // not named: it counts
      assertThat(api.peek("ip:127.0.0.1").remaining()).isZero();
      assertThat(code(() -> echo.say("x"))).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    }
  }

  @Test void theLimitFieldsGoInTheTrailersOfACallThatClosesWithoutHeaders() throws Exception {
    RateLimiter api = limiter("api", 3);
    try (Echo echo = new Echo(RateLimitInterceptor.builder().limit(api).build())) {
      StatusRuntimeException e = catchThrowableOfType(StatusRuntimeException.class, () -> echo.say("fail:NOT_FOUND"));
      assertThat(Echo.get(e.getTrailers(), "ratelimit")).isEqualTo("\"api\";r=2;t=60");
    }
  }

  @Test void badSettingsFailAtBuildNamingTheValueAndTheRule() {
    RateLimiter api = limiter("api", 1);
    for (String bad : List.of("", "Say", "test.Echo/", "/Say", "test.*/Say", "test.Echo/S*", "test.Echo/Say/x", "test. Echo/*")) {
      assertThatThrownBy(() -> RateLimitInterceptor.builder().limit(bad, api)).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("'" + bad + "'").hasMessageContaining("pkg.Service/Method, pkg.Service/* or *");
    }
    assertThatThrownBy(() -> RateLimitInterceptor.builder().limit("a.B/*", api).limit("a.B/*", api))
        .hasMessageContaining("'a.B/*' is given twice");
    assertThatThrownBy(() -> RateLimitInterceptor.builder().limit("a.B/*")).hasMessageContaining("names no limiter");
    assertThatThrownBy(() -> RateLimitInterceptor.builder().build()).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("no limit is given");
    assertThatThrownBy(() -> RateLimitInterceptor.builder().keyFromHeader("token-bin")).hasMessageContaining("'token-bin'");
    assertThatThrownBy(() -> RateLimitInterceptor.builder().keyFromHeader(" ")).hasMessageContaining("blank");
  }

  /** The status code a call failed with. */
  private static Status.Code code(org.assertj.core.api.ThrowableAssert.ThrowingCallable call) {
    return catchThrowableOfType(StatusRuntimeException.class, call).getStatus().getCode();
  }

  static void awaitTrue(String what, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("not within 5 s: " + what);
      }
      Thread.sleep(5);
    }
  }
}
