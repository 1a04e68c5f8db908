package dev.sluice.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Ticker;
import dev.sluice.memory.MemoryRateLimiter;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RateLimitHeadersTest {
  private static final long T0 = 1_700_000_000_000_000L; // epoch micros, a whole second

  private static Map<String, String> allowed(RateLimitHeaders h, Decision a, Decision b, long now) {
    Map<String, String> m = new LinkedHashMap<>();
    h.allowed(a, b, now, m::put);
    return m;
  }

  @Test void allowedFixedWindowRendersBothFamilies() {
    ManualTicker t = ManualTicker.at(T0);
    MemoryRateLimiter lim = MemoryRateLimiter.builder(Policy.fixedWindow("api", 100, Duration.ofSeconds(60))).ticker(t).build();
    lim.tryAcquire("k");
    t.advance(Duration.ofMillis(29_500));
    Decision d = lim.tryAcquire("k");
    assertThat(allowed(RateLimitHeaders.all(), d, null, t.nowMicros())).containsExactly(
        Map.entry("RateLimit-Policy", "\"api\";q=100;w=60"),
        Map.entry("RateLimit", "\"api\";r=98;t=31"),
        Map.entry("X-RateLimit-Limit", "100"),
        Map.entry("X-RateLimit-Remaining", "98"),
        Map.entry("X-RateLimit-Reset", "1700000060"));
    assertThat(allowed(RateLimitHeaders.of(false, true), d, null, t.nowMicros())).containsOnlyKeys(
        "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset");
    assertThat(allowed(RateLimitHeaders.of(true, false), d, null, t.nowMicros())).containsOnlyKeys("RateLimit-Policy", "RateLimit");
    assertThat(allowed(RateLimitHeaders.of(false, false), d, null, t.nowMicros())).isEmpty();
  }

  @Test void withACeilingBothPoliciesAreListedAndTheTighterIsLegacy() {
    ManualTicker t = ManualTicker.at(T0);
    Policy client = Policy.fixedWindow("api", 10, Duration.ofSeconds(60));
    Policy ceiling = Policy.tokenBucket("ceiling", 5, 1, Duration.ofSeconds(2)); // refills from empty in 10 s
    MemoryRateLimiter lim = MemoryRateLimiter.builder(client).ticker(t).build();
    Decision a = lim.tryAcquire("k");
    Decision b = lim.tryAcquire("global", 1, ceiling);
    assertThat(allowed(RateLimitHeaders.all(), a, b, T0)).containsExactly(
        Map.entry("RateLimit-Policy", "\"api\";q=10;w=60, \"ceiling\";q=5;w=10"),
        Map.entry("RateLimit", "\"api\";r=9;t=60, \"ceiling\";r=4;t=2"),
        Map.entry("X-RateLimit-Limit", "5"),
        Map.entry("X-RateLimit-Remaining", "4"),
        Map.entry("X-RateLimit-Reset", "1700000002"));
  }

  @Test void windowSecondsPerAlgorithm() {
    assertThat(RateLimitHeaders.windowSeconds(Policy.slidingWindow("s", 5, Duration.ofMillis(1500)))).isEqualTo(2);
    assertThat(RateLimitHeaders.windowSeconds(Policy.gcra("g", 10, Duration.ofSeconds(1), 25))).isEqualTo(3);
    assertThat(RateLimitHeaders.windowSeconds(Policy.slidingLog("l", 5, Duration.ofMillis(1)))).isEqualTo(1);
    // the span the core computes once (Algorithm.quotaMicros, a ticket's life too), in seconds rounded up
    Policy bucket = Policy.tokenBucket("b", 100, 3, Duration.ofSeconds(1));
    assertThat(bucket.algorithm().quotaMicros()).isEqualTo(33_333_334L);
    assertThat(RateLimitHeaders.windowSeconds(bucket)).isEqualTo(34);
  }

  @Test void failureModeDecisionsRenderNoLimitHeaders() {
    Policy p = Policy.fixedWindow("api", 10, Duration.ofSeconds(60));
    Decision open = FailureMode.open((pol, r, c) -> { }).decide(p, "k", 1, Reason.TIMEOUT, null, T0);
    assertThat(allowed(RateLimitHeaders.all(), open, null, T0)).isEmpty();
  }
}
