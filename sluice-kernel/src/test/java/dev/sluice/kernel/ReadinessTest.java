package dev.sluice.kernel;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** A store probe is asked at most once per interval, however often readiness is; a peek never charges. */
class ReadinessTest {
  static final class ProbedStore extends Store {
    final AtomicInteger probes = new AtomicInteger();
    volatile String answer;

    @Override public String name() { return "probed"; }
    @Override public String describe() { return "a store for ReadinessTest"; }
    @Override public boolean shared() { return true; }
    @Override public RateLimiter limiter(Policy policy, RateLimitListener listener) {
      throw new UnsupportedOperationException("no limiter: a probe never asks one");
    }
    @Override public String probe() {
      probes.incrementAndGet();
      return answer;
    }
  }

  @Test void probesTheStoreAtMostOncePerIntervalAndReportsWhatItFound() {
    ProbedStore store = new ProbedStore();
    AtomicLong clock = new AtomicLong(1_000);
    Readiness r = new Readiness(store, 1_000_000_000L, clock::get);
    for (int i = 0; i < 1_000; i++) {
      assertThat(r.status().ready()).isTrue();
    }
    assertThat(store.probes).hasValue(1);

    store.answer = "timeout";
    clock.addAndGet(999_999_999L);
    assertThat(r.status().ready()).as("the last answer, until the interval has passed").isTrue();
    clock.addAndGet(1);
    Readiness.Status s = r.status();
    assertThat(s.reason()).isEqualTo("timeout");
    assertThat(s.path()).as("a store probe takes no decision path").isNull();
    assertThat(r.status().reason()).isEqualTo("timeout");
    assertThat(store.probes).hasValue(2);
    store.answer = null;
    assertThat(r.probe().ready()).as("an explicit probe asks now").isTrue();
  }

  @Test void aPeekAtAKeyAtItsLimitIsReadyAndChargesNothing() {
    try (Store store = Store.memory(10, Ticker.system())) {
      RateLimiter l = store.limiter(Policy.fixedWindow("api", 1, Duration.ofMinutes(1)), RateLimitListener.NONE);
      assertThat(l.tryAcquire("probe").allowed()).isTrue();
      assertThat(Readiness.peek(l, "probe").ready()).as("a key at its limit is the store working").isTrue();
      RateLimiter other = store.limiter(Policy.fixedWindow("other", 1, Duration.ofMinutes(1)), RateLimitListener.NONE);
      assertThat(Readiness.peek(other, "k").ready()).isTrue();
      assertThat(other.tryAcquire("k").allowed()).as("the peek charged nothing").isTrue();
    }
  }
}
