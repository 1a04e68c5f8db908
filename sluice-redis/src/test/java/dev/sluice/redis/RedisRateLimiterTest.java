package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** Builder rules, clock rules, listeners and the module surface. */
class RedisRateLimiterTest {
  private static String unique(String what) {
    return what + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  @Test void aPolicyRedefinedWithAnotherAlgorithmStartsFresh() {
    String name = unique("redefined");
    Policy counter = Policy.fixedWindow(name, 2, Duration.ofMinutes(1));
    Policy log = Policy.slidingLog(name, 3, Duration.ofMinutes(1));
    try (RedisRateLimiter l = RedisRateLimiter.builder(counter, SharedRedis.client()).build()) {
      assertThat(l.tryAcquire("k", 2).allowed()).isTrue();
      assertThat(l.tryAcquire("k", 3, log).remaining()).as("the counter's state says nothing about the log").isZero();
      assertThat(l.peek("k", counter).remaining()).as("and the log's nothing about the counter").isEqualTo(2);
      assertThat(l.tryAcquire("k", 2, counter).allowed()).isTrue();
      assertThat(l.peek("k", log).remaining()).isEqualTo(3);
    }
  }

  @Test void valuesOutsideTheScriptsExactRangeAreRefusedByThePolicyItself() {
    // The scripts' range rules are the core's (issue 14, finding 3): no policy gets as far as Redis.
    assertThatThrownBy(() -> Policy.fixedWindow("huge", Long.MAX_VALUE, Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("fixed window: limit 9223372036854775807 exceeds 2^52");
    assertThatThrownBy(() -> Policy.slidingWindow("ages", 1, Duration.ofDays(365L * 100)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("window PT876000H is too long; at most 2^48 microseconds");
    assertThatThrownBy(() -> Policy.slidingLog("huge-log", Long.MAX_VALUE, Duration.ofMinutes(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("sliding log: limit 9223372036854775807 exceeds 2^52");
  }

  @Test void builderSettingsFailFast() {
    Policy p = Policy.fixedWindow("b", 1, Duration.ofSeconds(1));
    var b = RedisRateLimiter.builder(p, SharedRedis.client());
    assertThatThrownBy(() -> b.timeout(Duration.ofNanos(999_999))).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("timeout PT0.000999999S is outside 1 ms..1 min; every decision needs a deadline a caller can wait for");
    assertThatThrownBy(() -> b.timeout(null)).isInstanceOf(IllegalArgumentException.class).hasMessage("timeout is null");
    assertThatThrownBy(() -> b.failureMode(null)).isInstanceOf(IllegalArgumentException.class).hasMessage("failureMode is null");
    assertThatThrownBy(() -> b.ticker(null)).isInstanceOf(IllegalArgumentException.class).hasMessage("ticker is null");
    assertThatThrownBy(() -> b.expiryGrace(Duration.ofMillis(-1))).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("expiryGrace PT-0.001S is negative; use Duration.ZERO or more");
    assertThatThrownBy(() -> RedisRateLimiter.builder(null, SharedRedis.client())).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("policy is null");
    assertThatThrownBy(() -> RedisRateLimiter.builder(p, (io.lettuce.core.RedisClient) null))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("client is null");
  }

  @Test void anInvalidClockReadingFailsClosedEvenWhenOpen() {
    ManualTicker ticker = ManualTicker.at(1); // set to each bad reading below
    AtomicInteger alerts = new AtomicInteger();
    Policy p = Policy.tokenBucket(unique("clock"), 3, 1, Duration.ofSeconds(1));
    try (RedisRateLimiter l = RedisRateLimiter.builder(p, SharedRedis.client()).ticker(ticker)
        .failureMode(FailureMode.open((pol, r, c) -> alerts.incrementAndGet())).build()) {
      for (long bad : new long[] {0, -5, (1L << 52) - (1L << 49) + 1, 1L << 52}) {
        ticker.set(bad);
        Decision d = l.tryAcquire("k");
        assertThat(d.allowed()).isFalse();
        assertThat(d.reason()).isEqualTo(Reason.INVALID_CLOCK);
        assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
        assertThat(l.tryAcquireAsync("k", 1).toCompletableFuture().join().reason()).isEqualTo(Reason.INVALID_CLOCK);
      }
      ticker.set((1L << 52) - (1L << 49));
      assertThat(l.tryAcquire("k").path()).isEqualTo(Path.PRIMARY);
    }
    assertThat(alerts).hasValue(0);
  }

  /**
   * Issue 26, finding 6: with {@code Ticker.manual}, an acquire at T0 + 10 ms on a limit of 1 per
   * 100 ms, 1.5 s of wall time while the ticker moved to T0 + 50 ms, and a second acquire was allowed
   * on every algorithm: the key's TTL (the state's lifetime plus the 1 s {@code expiryGrace}) had run
   * out on Redis's clock while the supplied clock still counted the state; memory and PostgreSQL
   * refused. With the default grace, a reading that lags the ticker's earlier readings by more than
   * the grace is refused, {@code INVALID_CLOCK} whatever the failure mode, until the clock catches up.
   */
  @Test void aSuppliedClockLaggingTheWallClockForgotTheState() {
    long t0 = 1_800_000_000_000_000L;
    ManualTicker ticker = ManualTicker.at(t0 + 10_000);
    Duration w = Duration.ofMillis(100);
    List<Policy> ps = List.of(Policy.fixedWindow(unique("lag-fw"), 1, w), Policy.slidingWindow(unique("lag-sw"), 1, w),
        Policy.tokenBucket(unique("lag-tb"), 1, 1, w), Policy.gcra(unique("lag-gcra"), 1, w, 1), Policy.slidingLog(unique("lag-sl"), 1, w));
    List<RedisRateLimiter> ls = ps.stream().map(p -> RedisRateLimiter.builder(p, SharedRedis.client()).ticker(ticker)
        .failureMode(FailureMode.open((pol, r, c) -> { })).build()).toList();
    try {
      long start = System.nanoTime();
      for (RedisRateLimiter l : ls) {
        assertThat(l.tryAcquire("k").allowed()).as("%s", l).isTrue();
      }
      long deadline = start + Duration.ofSeconds(10).toNanos();
      while (ps.stream().anyMatch(p -> SharedRedis.admin().sync().exists(RedisRateLimiter.storedKey(p, "k")) > 0)) {
        assertThat(System.nanoTime()).as("the keys' TTLs never ran out").isLessThan(deadline);
        LockSupport.parkNanos(Duration.ofMillis(10).toNanos());
      }
      long lagged = System.nanoTime() - start;
      ticker.set(t0 + 50_000); // 40 ms on, over a second of wall time later
      for (RedisRateLimiter l : ls) {
        Decision d = l.tryAcquire("k");
        assertThat(d.allowed()).as("%s, %d ms of wall time after the first acquire", l, lagged / 1_000_000).isFalse();
        assertThat(d.reason()).isEqualTo(Reason.INVALID_CLOCK);
        assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
        assertThat(l.peek("k").reason()).isEqualTo(Reason.INVALID_CLOCK);
      }
      ticker.set(t0 + 10_000 + (System.nanoTime() - start) / 1_000); // caught up: every state has ended
      for (RedisRateLimiter l : ls) {
        assertThat(l.tryAcquire("k").allowed()).as("%s, once the clock caught up", l).isTrue();
      }
    } finally {
      ls.forEach(RedisRateLimiter::close);
    }
  }

  @Test void aConnectionTheCallerOwnsIsUsedAndLeftOpen() throws Exception {
    var connection = SharedRedis.client().connect();
    Policy p = Policy.gcra(unique("own"), 1, Duration.ofMinutes(1), 2);
    try (RedisRateLimiter l = RedisRateLimiter.builder(p, connection).build()) {
      assertThat(l.tryAcquire("k", 2).allowed()).isTrue();
      Decision refused = l.tryAcquireAsync("k", 1).toCompletableFuture().get();
      assertThat(refused.reason()).isEqualTo(Reason.LIMIT_EXCEEDED);
    }
    assertThat(connection.isOpen()).as("closing the limiter leaves the caller's connection open").isTrue();
    connection.close();
  }

  @Test void listenersSeeKeysOnlyWhenOptedIn() {
    Policy p = Policy.fixedWindow(unique("listen"), 1, Duration.ofMinutes(1));
    for (boolean includeKeys : new boolean[] {false, true}) {
      List<String> seen = new ArrayList<>();
      List<Reason> refusals = new ArrayList<>();
      AtomicInteger storeCalls = new AtomicInteger();
      List<Refund> refunds = new ArrayList<>();
      RateLimitListener listener = new RateLimitListener() {
        @Override public void onDecision(Decision d, String key) {
          seen.add(key);
        }

        @Override public void onRefusal(Decision d, String key) {
          refusals.add(d.reason());
        }

        @Override public void onStoreCall(Policy policy, long latencyNanos, Throwable error) {
          storeCalls.incrementAndGet();
          assertThat(latencyNanos).isPositive();
          assertThat(error).isNull();
        }

        @Override public void onRefund(Policy policy, Refund r) {
          refunds.add(r);
          throw new IllegalStateException("a throwing listener never breaks a refund");
        }
      };
      try (RedisRateLimiter l = RedisRateLimiter.builder(p, SharedRedis.client()).listener(listener, includeKeys).build()) {
        String key = unique("who");
        Decision d = l.tryAcquire(key);
        l.tryAcquire(key);
        assertThat(l.refund(d.ticket().orElseThrow())).isEqualTo(Refund.APPLIED);
        assertThat(seen).containsExactly(includeKeys ? key : null, includeKeys ? key : null);
        assertThat(refusals).containsExactly(Reason.LIMIT_EXCEEDED);
        assertThat(storeCalls).hasValue(3);
        assertThat(refunds).containsExactly(Refund.APPLIED);
      }
    }
  }

  /**
   * Issue 19: a settlement is one EVALSHA, as an acquire (counted the same way, one store call
   * each), whichever way it goes; one that equals its reservation needs none.
   */
  @Test void aSettlementIsOneRoundTripLikeAnAcquire() {
    Policy p = Policy.tokenBucket(unique("settle"), 100, 10, Duration.ofSeconds(1));
    AtomicInteger storeCalls = new AtomicInteger();
    List<Settlement> settled = new ArrayList<>();
    RateLimitListener listener = new RateLimitListener() {
      @Override public void onStoreCall(Policy policy, long latencyNanos, Throwable error) {
        storeCalls.incrementAndGet();
        assertThat(error).isNull();
      }

      @Override public void onSettle(Policy policy, Settlement r) {
        settled.add(r);
      }
    };
    ManualTicker ticker = ManualTicker.at(1_800_000_000_000_000L);
    try (RedisRateLimiter l = RedisRateLimiter.builder(p, SharedRedis.client()).ticker(ticker).listener(listener, false).build()) {
      String key = unique("tenant");
      Ticket big = l.tryAcquire(key, 40).ticket().orElseThrow();
      assertThat(storeCalls).hasValue(1);
      assertThat(l.settle(big, 10)).isEqualTo(Settlement.APPLIED);
      assertThat(storeCalls).as("an unused part given back: one call").hasValue(2);
      Ticket small = l.tryAcquire(key, 5).ticket().orElseThrow();
      assertThat(l.settle(small, 50)).isEqualTo(Settlement.APPLIED);
      assertThat(storeCalls).as("an overrun charged: one call").hasValue(4);
      Ticket exact = l.tryAcquire(key, 1).ticket().orElseThrow();
      assertThat(l.settle(exact, 1)).isEqualTo(Settlement.NO_EFFECT);
      assertThat(storeCalls).as("nothing to change: no call").hasValue(5);
      assertThat(l.peek(key).remaining()).isEqualTo(100 - 10 - 50 - 1);
      assertThat(settled).containsExactly(Settlement.APPLIED, Settlement.APPLIED, Settlement.NO_EFFECT);
    }
  }

  @Test void theModuleExportsOnlyTheApiPackage() throws Exception {
    ModuleDescriptor d;
    try (InputStream in = Files.newInputStream(java.nio.file.Path.of(System.getenv().getOrDefault("SLUICE_MODULE_DIR", "."),
        "target", "classes", "module-info.class"))) {
      d = ModuleDescriptor.read(in);
    }
    assertThat(d.name()).isEqualTo("dev.sluice.redis");
    Set<String> exports = d.exports().stream().map(ModuleDescriptor.Exports::source).collect(Collectors.toCollection(TreeSet::new));
    assertThat(exports).containsExactly("dev.sluice.redis");
    assertThat(d.requires().stream().map(ModuleDescriptor.Requires::name)).contains("dev.sluice.core", "lettuce.core");
    // The implementation classes stay package-private; the scripts' package (public for the
    // benchmarks' script cost on the class path) is not exported. The public types are the limiter,
    // its builder and the transport a Redis client's adapter implements.
    for (Class<?> c : List.of(RedisBackend.class, LettuceTransport.class, RedisLink.class)) {
      assertThat(java.lang.reflect.Modifier.isPublic(c.getModifiers())).as(c.getName()).isFalse();
    }
    Set<String> publicTypes = new TreeSet<>();
    try (var files = Files.list(java.nio.file.Path.of(System.getenv().getOrDefault("SLUICE_MODULE_DIR", "."),
        "target", "classes", "dev", "sluice", "redis"))) {
      for (java.nio.file.Path f : (Iterable<java.nio.file.Path>) files::iterator) {
        String n = f.getFileName().toString();
        if (n.endsWith(".class")) {
          Class<?> c = Class.forName("dev.sluice.redis." + n.substring(0, n.length() - 6));
          if (java.lang.reflect.Modifier.isPublic(c.getModifiers())) {
            publicTypes.add(c.getSimpleName());
          }
        }
      }
    }
    assertThat(publicTypes).containsExactlyInAnyOrder("RedisRateLimiter", "Builder", "RedisTransport");
  }
}
