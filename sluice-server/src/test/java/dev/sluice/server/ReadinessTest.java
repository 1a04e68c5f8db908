package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The readiness probe asks the store at most once per interval, however often it is asked, on a manual clock. */
class ReadinessTest {
  /** A store whose probe counts its calls and answers what the test says. */
  static final class ProbedStore extends Store {
    final AtomicInteger probes = new AtomicInteger();
    volatile String answer;

    @Override String name() { return "probed"; }

    @Override String describe() { return "a store for ReadinessTest"; }

    @Override boolean shared() { return true; }

    @Override RateLimiter limiter(Policy policy, RateLimitListener listener) {
      throw new UnsupportedOperationException("no limiter: a probe never asks one");
    }

    @Override String probe() {
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
    assertThat(store.probes.get()).isEqualTo(1);

    store.answer = "timeout";
    clock.addAndGet(999_999_999L);
    assertThat(r.status().ready()).as("the last answer, until the interval has passed").isTrue();
    clock.addAndGet(1);
    assertThat(r.status().reason()).isEqualTo("timeout");
    assertThat(r.status().reason()).isEqualTo("timeout");
    assertThat(store.probes.get()).isEqualTo(2);
  }
}
