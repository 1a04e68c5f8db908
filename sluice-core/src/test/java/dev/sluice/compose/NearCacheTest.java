package dev.sluice.compose;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimiters;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Ticker;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * The near-cache in front of a store. The store is the memory tier behind a wrapper that counts every
 * call reaching it (each one would be a round trip to Redis or PostgreSQL).
 */
class NearCacheTest {
  final ManualTicker ticker = ManualTicker.at(CompositionTest.T0);
  final Policy login = Policy.fixedWindow("login", 5, Duration.ofMinutes(1));
  final Legs.Plain store = new Legs.Plain(Legs.memory(login, ticker));

  @Test
  void aFloodAgainstALockedKeyCostsOneRoundTrip() {
    NearCachedRateLimiter cached = NearCachedRateLimiter.builder(store).ticker(ticker).build();
    for (int i = 0; i < 5; i++) {
      assertThat(cached.tryAcquire("victim").allowed()).isTrue();
    }
    ticker.advance(Duration.ofSeconds(20));
    Decision first = cached.tryAcquire("victim");
    assertThat(first.allowed()).isFalse();
    assertThat(first.path()).isEqualTo(Path.PRIMARY);

    for (int i = 0; i < 10_000; i++) {
      Decision d = cached.tryAcquire("victim");
      assertThat(d.allowed()).isFalse();
      assertThat(d.path()).isEqualTo(Path.NEAR_CACHE);
    }
    assertThat(store.acquires()).as("round trips to the store").isEqualTo(6);
    assertThat(cached.hits()).isEqualTo(10_000);
    assertThat(cached.roundTrips()).isEqualTo(6);

    // A cached refusal reports the time still to wait, to the microsecond.
    ticker.advance(Duration.ofSeconds(30));
    Decision later = cached.tryAcquire("victim");
    assertThat(later.path()).isEqualTo(Path.NEAR_CACHE);
    assertThat(later.reason()).isEqualTo(Reason.LIMIT_EXCEEDED);
    assertThat(later.retryAfter()).isEqualTo(Duration.ofSeconds(10));
    assertThat(later.limit()).isEqualTo(5);

    // At t the entry is stale: the store is asked again and admits.
    ticker.advance(Duration.ofSeconds(10));
    assertThat(cached.tryAcquire("victim").allowed()).isTrue();
    assertThat(store.acquires()).isEqualTo(7);
    assertThat(cached.tryAcquire("bystander").allowed()).as("other keys are untouched").isTrue();
  }

  @Test
  void aRefundInvalidatesTheCachedRefusal() {
    NearCachedRateLimiter cached = NearCachedRateLimiter.builder(store).ticker(ticker).build();
    Decision last = null;
    for (int i = 0; i < 5; i++) {
      last = cached.tryAcquire("acct");
    }
    assertThat(cached.tryAcquire("acct").allowed()).isFalse();
    assertThat(cached.size()).isEqualTo(1);

    assertThat(cached.refund(last.ticket().orElseThrow())).isEqualTo(Refund.APPLIED);
    assertThat(cached.size()).isZero();
    Decision again = cached.tryAcquire("acct");
    assertThat(again.allowed()).as("the refunded permit is usable at once, not after the cached retry").isTrue();

    cached.tryAcquire("acct");
    cached.reset("acct", login);
    assertThat(cached.tryAcquire("acct").allowed()).isTrue();
  }

  @Test
  void aRefusalOfManyPermitsDoesNotRefuseFewer() {
    NearCachedRateLimiter cached = NearCachedRateLimiter.builder(store).ticker(ticker).build();
    cached.tryAcquire("k", 3);
    assertThat(cached.tryAcquire("k", 3).allowed()).isFalse();
    assertThat(cached.tryAcquire("k", 4).path()).isEqualTo(Path.NEAR_CACHE);
    assertThat(cached.tryAcquire("k", 2).allowed()).as("two still fit; the cache must not say otherwise").isTrue();
  }

  @Test
  void staysWithinItsBoundAndRecoversAsEntriesExpire() {
    NearCachedRateLimiter cached = NearCachedRateLimiter.builder(store).ticker(ticker).maxEntries(100).build();
    for (int i = 0; i < 1000; i++) {
      cached.tryAcquire("spray-" + i, 5);
      assertThat(cached.tryAcquire("spray-" + i).allowed()).isFalse();
      assertThat(cached.size()).isLessThanOrEqualTo(100);
    }
    assertThat(cached.size()).isEqualTo(100);
    assertThat(cached.notCached()).isEqualTo(900);
    // Uncached refusals are still refusals: the store answers them.
    assertThat(cached.tryAcquire("spray-999").allowed()).isFalse();

    ticker.advance(Duration.ofMinutes(1));
    cached.tryAcquire("fresh", 5);
    assertThat(cached.tryAcquire("fresh").path()).isEqualTo(Path.PRIMARY);
    assertThat(cached.tryAcquire("fresh").path()).as("expired entries were purged to make room").isEqualTo(Path.NEAR_CACHE);
    assertThat(cached.size()).isEqualTo(1);
  }

  @Test
  void failuresAreNeverCached() {
    var failing = new Legs.Throwing(login, new IllegalStateException()) {
      int calls;

      @Override public Decision tryAcquire(String key, long permits, Policy p) {
        calls++;
        return Decision.builder(p).refused(Reason.STORE_UNAVAILABLE).path(Path.FAILURE_MODE)
            .resetAtMicros(ticker.nowMicros() + 1_000_000).retryAfterMicros(1_000_000).build();
      }
    };
    NearCachedRateLimiter cached = NearCachedRateLimiter.builder(failing).ticker(ticker).build();
    cached.tryAcquire("k");
    cached.tryAcquire("k");
    assertThat(failing.calls).as("an outage is not a limit: ask again").isEqualTo(2);
    assertThat(cached.hits()).isZero();
  }

  @Test
  void theAsyncPathUsesTheCacheToo() throws Exception {
    NearCachedRateLimiter cached = RateLimiters.nearCache(store);
    Legs.Plain s = store;
    for (int i = 0; i < 6; i++) {
      cached.tryAcquireAsync("k", 1).toCompletableFuture().get();
    }
    CompletableFuture<Decision> hit = cached.tryAcquireAsync("k", 1).toCompletableFuture();
    assertThat(hit).isDone();
    assertThat(hit.get().path()).isEqualTo(Path.NEAR_CACHE);
    assertThat(s.acquires()).isEqualTo(6);
  }
}
