package dev.sluice.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.memory.MemoryRateLimiter;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class HttpRateLimitTest {
  private final ManualTicker ticker = ManualTicker.at(1_700_000_000_000_000L);
  private final Policy api = Policy.fixedWindow("api", 3, Duration.ofSeconds(60));
  private final MemoryRateLimiter limiter = MemoryRateLimiter.builder(api).ticker(ticker).build();

  @Test void conflictingSettingsAreRefused() {
    assertThatThrownBy(() -> HttpRateLimit.builder(limiter).skipFailedRequests(true).skipSuccessfulRequests(true).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("skipFailedRequests and skipSuccessfulRequests are both set; then only 4xx answers would count: choose one");
    assertThatThrownBy(() -> HttpRateLimit.builder(limiter).globalCeiling(Policy.fixedWindow("api", 10, Duration.ofSeconds(1))).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("ceiling policy name 'api' equals the identity policy's; give the ceiling its own name so the budgets stay apart");
    assertThatThrownBy(() -> HttpRateLimit.builder(null)).isInstanceOf(IllegalArgumentException.class).hasMessage("limiter is null");
  }

  @Test void theHeaderClockIsTheLimitersWhenItHasOne() {
    HttpRateLimit rl = HttpRateLimit.builder(limiter).build();
    assertThat(rl.ticker).isSameAs(ticker);
    assertThat(rl.policy()).isEqualTo(api);
    assertThat(rl.keyOf(new FakeRequest(null))).isEqualTo("unknown");
    assertThat(rl.keyOf(new FakeRequest("::ffff:198.51.100.4"))).isEqualTo("ip:198.51.100.4");
  }

  @Test void aCeilingRefusalLeavesTheClientUncharged() {
    Policy ceiling = Policy.fixedWindow("ceiling", 1, Duration.ofSeconds(60));
    HttpRateLimit rl = HttpRateLimit.builder(limiter).globalCeiling(ceiling).build();
    assertThat(rl.admit(new FakeRequest("198.51.100.1")).verdict.status()).isEqualTo(200);
    assertThat(rl.admit(new FakeRequest("198.51.100.2")).verdict.status()).isEqualTo(429);
    assertThat(limiter.peek("ip:198.51.100.2").remaining()).isEqualTo(3);
    // A client over its own limit does not consume the ceiling.
    ticker.advance(Duration.ofSeconds(60));
    for (int i = 0; i < 3; i++) {
      limiter.tryAcquire("ip:198.51.100.3");
    }
    assertThat(rl.admit(new FakeRequest("198.51.100.3")).verdict.status()).isEqualTo(429);
    assertThat(limiter.peek(HttpRateLimit.GLOBAL_KEY, ceiling).remaining()).isEqualTo(1);
  }

  @Test void contentionIsTheClientsDoingAndAnswers429NotAn503() {
    RateLimiter contended = new RateLimiter() {
      @Override public Policy policy() { return api; }

      @Override public Decision tryAcquire(String key, long permits, Policy p) {
        return FailureMode.closed().decide(p, key, permits, Reason.CONTENTION, null, ticker.nowMicros());
      }

      @Override public Decision peek(String key, Policy p) { return tryAcquire(key, 1, p); }

      @Override public Refund refund(Ticket ticket) { return Refund.NO_EFFECT; }

      @Override public void reset(String key, Policy p) {}
    };
    Admission a = HttpRateLimit.builder(contended).ticker(ticker).build().admit(new FakeRequest("198.51.100.1"));
    assertThat(a.verdict.status()).isEqualTo(429);
    Map<String, String> headers = new LinkedHashMap<>();
    a.headers(headers::put);
    assertThat(headers).containsExactly(Map.entry("Retry-After", "1")); // no store answered: no limit headers
  }

  /**
   * Issue 14.4, through HTTP: the global ceiling is CeilingRateLimiter's (one implementation), so its
   * key is pinned in the memory tier too. A spray of client addresses fills the table; the ceiling's
   * window rolls every second, and the tracked clients are still admitted every time.
   */
  @Test void aSprayLockedEveryoneOutOfTheGlobalCeiling() {
    MemoryRateLimiter small = MemoryRateLimiter.builder(Policy.fixedWindow("api", 100, Duration.ofHours(1))).ticker(ticker).maxKeys(100).build();
    HttpRateLimit rl = HttpRateLimit.builder(small).globalCeiling(Policy.fixedWindow("ceiling", 1_000, Duration.ofSeconds(1))).build();
    for (int u = 0; u < 10; u++) {
      assertThat(rl.admit(new FakeRequest("198.51.100." + u)).verdict.status()).isEqualTo(HttpVerdict.OK);
    }
    int admitted = 0;
    for (int s = 0; s < 55; s++) {
      ticker.advance(Duration.ofSeconds(1));
      for (int i = 0; i < 200; i++) {
        rl.admit(new FakeRequest("10." + s + "." + i / 100 + "." + i % 100));
      }
      if (rl.admit(new FakeRequest("198.51.100." + s % 10)).verdict.status() == HttpVerdict.OK) {
        admitted++;
      }
    }
    assertThat(admitted).isEqualTo(55);
  }
}
