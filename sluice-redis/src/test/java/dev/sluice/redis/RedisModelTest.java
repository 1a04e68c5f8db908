package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.Ticker;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The scripts against the reference model, algorithm by algorithm, including the arithmetic edges. */
class RedisModelTest {
  private static final long START = 1_795_000_000_123_457L;

  private static String name(String what) {
    return what + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  private static void run(List<Policy> policies, long[] steps, long seed) {
    ManualTicker ticker = ManualTicker.at(START + seed);
    try (RedisRateLimiter limiter = RedisRateLimiter.builder(policies.get(0), SharedRedis.client())
        .ticker(ticker).expiryGrace(Duration.ofMinutes(10)).timeout(Duration.ofSeconds(2)).build()) {
      ModelTrace.replay(limiter, ticker, policies, steps, 1500, seed);
    }
  }

  @Test void fixedWindowMatchesTheModel() {
    run(List.of(Policy.fixedWindow(name("fw"), 10, Duration.ofMillis(1500)),
            Policy.fixedWindow(name("fw1"), 1, Duration.ofMillis(1)),
            Policy.fixedWindow(name("fwbig"), 1L << 52, Duration.ofDays(3000))),
        new long[] {1, 999, 1000, 1001, 100_000, 1_499_999, 1_500_000, 3_000_000}, 11);
  }

  @Test void slidingWindowMatchesTheModel() {
    run(List.of(Policy.slidingWindow(name("sw"), 7, Duration.ofSeconds(1)),
            Policy.slidingWindow(name("sw3"), 3, Duration.ofMillis(7)),
            Policy.slidingWindow(name("swbig"), (1L << 52) / 86_400_000_000L, Duration.ofDays(1))),
        new long[] {1, 333, 3_500, 7_000, 250_000, 999_999, 1_000_000, 2_000_000, 86_400_000_000L}, 12);
  }

  @Test void tokenBucketMatchesTheModel() {
    run(List.of(Policy.tokenBucket(name("tb"), 10, 3, Duration.ofMillis(700)),
            Policy.tokenBucket(name("tbfast"), 5, 1L << 52, Duration.ofMillis(1)),
            Policy.tokenBucket(name("tbbig"), (1L << 52) / 3_600_000_000L, 9, Duration.ofHours(1))),
        new long[] {1, 7, 233, 1_000, 70_000, 700_000, 3_600_000_000L}, 13);
  }

  @Test void gcraMatchesTheModel() {
    run(List.of(Policy.gcra(name("g"), 7, Duration.ofMillis(1000), 4),
            Policy.gcra(name("gfast"), (1L << 52) - 3_000_000, Duration.ofSeconds(1), 3),
            Policy.gcra(name("g3"), 3, Duration.ofMillis(10), 1),
            Policy.gcra(name("gbig"), 1_000_003, Duration.ofDays(1), (1L << 52) / 86_400_000_000L)),
        new long[] {1, 3, 142_857, 333_333, 1_000_000, 3_333, 86_400_000_000L}, 14);
  }

  @Test void slidingLogMatchesTheModel() {
    run(List.of(Policy.slidingLog(name("sl"), 6, Duration.ofMillis(900)),
            Policy.slidingLog(name("sl1"), 1, Duration.ofMillis(1)),
            Policy.slidingLog(name("slbig"), 1L << 52, Duration.ofDays(3000))),
        new long[] {1, 2, 999, 1_000, 150_000, 899_999, 900_000, 1_800_000}, 15);
  }

  @Test void aLogRefundGoesOnlyToItsOwnEntry() {
    Policy p = Policy.slidingLog(name("slref"), 3, Duration.ofMillis(900));
    ManualTicker ticker = ManualTicker.at(START);
    try (RedisRateLimiter l = RedisRateLimiter.builder(p, SharedRedis.client()).ticker(ticker).build()) {
      var a = l.tryAcquire("k").ticket().orElseThrow();
      ticker.advanceMicros(500_000);
      var b = l.tryAcquire("k", 2).ticket().orElseThrow();
      ticker.advanceMicros(500_000);  // a's entry aged out, b's is live
      assertThat(l.refund(a)).as("a ticket whose entry aged out").isEqualTo(dev.sluice.Refund.NO_EFFECT);
      assertThat(l.peek("k").remaining()).isEqualTo(1);
      assertThat(l.refund(b)).isEqualTo(dev.sluice.Refund.APPLIED);
      assertThat(l.peek("k").remaining()).isEqualTo(3);
      assertThat(l.peek("k").resetAtMicros()).as("the emptied entry still dates the log, as in the model")
          .isEqualTo(b.stamp() + 900_000);
    }
  }

  @Test void serverClockDecidesAndChargesOnce() {
    Policy p = Policy.fixedWindow(name("srv"), 3, Duration.ofMinutes(1));
    try (RedisRateLimiter limiter = RedisRateLimiter.builder(p, SharedRedis.client()).build()) {
      long before = System.currentTimeMillis() * 1000;
      var d1 = limiter.tryAcquire("a");
      assertThat(d1.allowed()).isTrue();
      assertThat(d1.remaining()).isEqualTo(2);
      // The window start is the server's clock: close to ours (same machine), and the ticket carries it.
      assertThat(d1.ticket().get().stamp()).isBetween(before - 5_000_000, before + 5_000_000);
      assertThat(d1.resetAtMicros()).isEqualTo(d1.ticket().get().stamp() + 60_000_000);
      assertThat(limiter.tryAcquire("a", 2).remaining()).isZero();
      var refused = limiter.tryAcquire("a");
      assertThat(refused.allowed()).isFalse();
      assertThat(refused.retryAfter()).isPositive();
      assertThat(limiter.refund(d1.ticket().get())).isEqualTo(dev.sluice.Refund.APPLIED);
      assertThat(limiter.tryAcquire("a").allowed()).isTrue();
      Long ttl = SharedRedis.admin().sync().pttl(RedisRateLimiter.storedKey(p, "a"));
      assertThat(ttl).isBetween(50_000L, 60_000L);
    }
  }
}
