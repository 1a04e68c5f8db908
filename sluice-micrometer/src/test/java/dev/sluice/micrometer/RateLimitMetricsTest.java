package dev.sluice.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.Reason;
import dev.sluice.Ticker;
import dev.sluice.jdbc.store.DownJdbcStore;
import dev.sluice.memory.HashedSlotRateLimiter;
import dev.sluice.memory.MemoryRateLimiter;
import dev.sluice.store.InMemoryVersionedStore;
import dev.sluice.store.VersionedStoreRateLimiter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class RateLimitMetricsTest {
  private final ManualTicker ticker = ManualTicker.at(1_700_000_000_000_000L);
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

  private double count(String name, String... tags) {
    var c = registry.find(name).tags(tags).counter();
    return c == null ? 0 : c.count();
  }

  @Test void decisionsByPolicyOutcomeAndReasonAndNearLimit() {
    RateLimitMetrics metrics = RateLimitMetrics.builder().nearLimitFraction(0.3).build();
    metrics.bindTo(registry);
    Policy api = Policy.fixedWindow("api", 10, Duration.ofMinutes(1));
    MemoryRateLimiter limiter = MemoryRateLimiter.builder(api).ticker(ticker).listener(metrics, false).maxKeys(2).build();
    for (int i = 0; i < 12; i++) {
      limiter.tryAcquire("alice");
    }
    limiter.tryAcquire("bob");
    limiter.tryAcquire("carol"); // the table holds 2 keys: refused, key table full
    Policy search = Policy.tokenBucket("search", 2, 1, Duration.ofSeconds(1));
    limiter.tryAcquire("alice", 1, search);

    assertThat(count("sluice.decisions", "policy", "api", "outcome", "allowed", "reason", "within_limit")).isEqualTo(11);
    assertThat(count("sluice.decisions", "policy", "api", "outcome", "refused", "reason", "limit_exceeded")).isEqualTo(2);
    assertThat(count("sluice.decisions", "policy", "api", "outcome", "refused", "reason", "key_table_full")).isEqualTo(1);
    // maxKeys counts over all policies: alice under "search" is a third key.
    assertThat(count("sluice.decisions", "policy", "search", "outcome", "refused", "reason", "key_table_full")).isEqualTo(1);
    // alice's remaining 2, 1, 0 are under 0.3 x 10 = 3.
    assertThat(count("sluice.decisions.near.limit", "policy", "api")).isEqualTo(3);
    assertThat(registry.find("sluice.decisions").tag("policy", "api").counters()).hasSize(3);
  }

  @Test void refundsStoreLatencyAndStoreErrors() {
    RateLimitMetrics metrics = RateLimitMetrics.builder().build();
    metrics.bindTo(registry);
    Policy api = Policy.fixedWindow("api", 10, Duration.ofMinutes(1));
    MemoryRateLimiter limiter = MemoryRateLimiter.builder(api).ticker(ticker).listener(metrics, false).build();
    Decision d = limiter.tryAcquire("alice");
    limiter.refund(d.ticket().orElseThrow());
    limiter.refund(d.ticket().orElseThrow());
    assertThat(count("sluice.refunds", "policy", "api", "result", "applied")).isEqualTo(1);
    assertThat(count("sluice.refunds", "policy", "api", "result", "no_effect")).isEqualTo(1);
    Decision big = limiter.tryAcquire("alice", 5);
    limiter.settle(big.ticket().orElseThrow(), 2);
    limiter.settle(big.ticket().orElseThrow(), 2);
    assertThat(count("sluice.settlements", "policy", "api", "result", "applied")).isEqualTo(1);
    assertThat(count("sluice.settlements", "policy", "api", "result", "no_effect")).isEqualTo(1);

    // The guard every limiter calls the listener through passes the latency on unchanged.
    Policy timed = Policy.fixedWindow("timed", 10, Duration.ofMinutes(1));
    RateLimitListener guarded = RateLimitListener.guarded(metrics, false);
    guarded.onStoreCall(timed, 2_000_000, null);
    guarded.onStoreCall(timed, 4_000_000, null);
    var timer = registry.find("sluice.store.latency").tag("policy", "timed").timer();
    assertThat(timer.count()).isEqualTo(2);
    assertThat(timer.totalTime(TimeUnit.MILLISECONDS)).isEqualTo(6.0);
    assertThat(timer.max(TimeUnit.MILLISECONDS)).isEqualTo(4.0);
  }

  @Test void aSharedStoreReportsEveryCallsLatencyAndItsErrors() {
    RateLimitMetrics metrics = RateLimitMetrics.builder().build();
    metrics.bindTo(registry);
    Policy shared = Policy.tokenBucket("shared", 5, 1, Duration.ofSeconds(1));
    VersionedStoreRateLimiter up = VersionedStoreRateLimiter.builder(shared, new InMemoryVersionedStore())
        .ticker(ticker).listener(metrics, false).build();
    for (int i = 0; i < 3; i++) {
      up.tryAcquire("k");
    }
    var timer = registry.get("sluice.store.latency").tag("policy", "shared").timer();
    assertThat(timer.count()).as("one read and one compare-and-set per decision").isEqualTo(6);
    assertThat(registry.find("sluice.store.errors").counters()).isEmpty();

    Policy down = Policy.tokenBucket("down", 5, 1, Duration.ofSeconds(1));
    Decision d = DownJdbcStore.limiter(down, FailureMode.closed(), metrics).tryAcquire("k");
    assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
    assertThat(count("sluice.decisions", "policy", "down", "outcome", "refused", "reason", "store_unavailable")).isEqualTo(1);
    assertThat(registry.find("sluice.store.errors").tag("policy", "down").counters()).singleElement()
        .satisfies(c -> assertThat(c.count()).isEqualTo(1.0));
    assertThat(registry.get("sluice.store.latency").tag("policy", "down").timer().count()).isEqualTo(1);
  }

  @Test void trackedKeysAndSlotOccupancyGauges() {
    RateLimitMetrics metrics = RateLimitMetrics.builder().build();
    Policy api = Policy.fixedWindow("api", 10, Duration.ofMinutes(1));
    MemoryRateLimiter memory = MemoryRateLimiter.builder(api).ticker(ticker).build();
    metrics.trackedKeys("api-memory", memory::trackedKeys);
    metrics.bindTo(registry);
    HashedSlotRateLimiter slots = HashedSlotRateLimiter.of(api, 64, ticker);
    metrics.slotOccupancy("api-slots", slots::occupiedSlots); // after binding: registered at once
    memory.tryAcquire("a");
    memory.tryAcquire("b");
    slots.tryAcquire("a");
    assertThat(registry.get("sluice.keys.tracked").tag("limiter", "api-memory").gauge().value()).isEqualTo(2.0);
    assertThat(registry.get("sluice.slots.occupied").tag("limiter", "api-slots").gauge().value()).isEqualTo(1.0);
  }

  @Test void eventsBeforeBindingAreDroppedAndBadSettingsThrow() {
    RateLimitMetrics metrics = RateLimitMetrics.builder().build();
    Policy api = Policy.fixedWindow("api", 10, Duration.ofMinutes(1));
    MemoryRateLimiter.builder(api).ticker(ticker).listener(metrics, false).build().tryAcquire("a");
    metrics.bindTo(registry);
    assertThat(registry.getMeters()).isEmpty();
    assertThatThrownBy(() -> metrics.bindTo(new SimpleMeterRegistry())).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> RateLimitMetrics.builder().nearLimitFraction(1.5))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("nearLimitFraction 1.5 is outside [0, 1]; use e.g. 0.1 for \"under 10% left\"");
  }
}
