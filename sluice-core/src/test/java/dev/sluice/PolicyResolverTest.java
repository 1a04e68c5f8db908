package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class PolicyResolverTest {
  private static final Policy FREE = Policy.fixedWindow("api", 60, Duration.ofMinutes(1));
  private static final Policy PRO = Policy.fixedWindow("api", 1_000, Duration.ofMinutes(1));
  private static final Policy BLOCKED = Policy.fixedWindow("api", 5, Duration.ofMinutes(1));

  record Req(String tenant, String plan) {}

  @Test void answersAreCachedPerKeyUntilInvalidated() {
    AtomicInteger asked = new AtomicInteger();
    Map<String, Policy> plans = new ConcurrentHashMap<>(Map.of("acme", PRO));
    PolicyResolver<Req> r = PolicyResolver.<Req>builder(q -> {
      asked.incrementAndGet();
      return plans.get(q.tenant());
    }, BLOCKED).cacheBy(Req::tenant).build();
    assertThat(r.resolve(new Req("acme", null))).isSameAs(PRO);
    assertThat(r.resolve(new Req("acme", null))).isSameAs(PRO);
    assertThat(asked.get()).isEqualTo(1);
    plans.put("acme", FREE);
    assertThat(r.resolve(new Req("acme", null))).as("cached").isSameAs(PRO);
    r.invalidate("acme");
    assertThat(r.resolve(new Req("acme", null))).isSameAs(FREE);
    r.invalidateAll();
    assertThat(r.cached()).isZero();
  }

  @Test void aResolverThatThrowsOrAnswersNothingIsDecidedByTheUnresolvedPolicyAndNotCached() {
    AtomicInteger asked = new AtomicInteger();
    PolicyResolver<Req> r = PolicyResolver.<Req>builder(q -> {
      asked.incrementAndGet();
      if (q.plan().equals("boom")) {
        throw new IllegalStateException("plan service down");
      }
      return q.plan().equals("pro") ? PRO : null;
    }, BLOCKED).cacheBy(Req::tenant).build();
    assertThat(r.resolve(new Req("a", "boom"))).isSameAs(BLOCKED);
    assertThat(r.resolve(new Req("a", "boom"))).isSameAs(BLOCKED);
    assertThat(r.resolve(new Req("b", "nothing"))).isSameAs(BLOCKED);
    assertThat(r.failures()).isEqualTo(3);
    assertThat(asked.get()).as("failures are asked again").isEqualTo(3);
    assertThat(r.cached()).isZero();
    PolicyResolver<Req> badKey = PolicyResolver.<Req>builder(q -> PRO, BLOCKED).cacheBy(q -> {
      throw new IllegalStateException("no tenant");
    }).build();
    assertThat(badKey.resolve(new Req("a", "pro"))).isSameAs(BLOCKED);
  }

  @Test void theCacheIsBoundedUnderManyThreadsAndDistinctKeys() throws Exception {
    PolicyResolver<Req> r = PolicyResolver.<Req>builder(q -> PRO, BLOCKED).cacheBy(Req::tenant).maxEntries(100).build();
    CountDownLatch go = new CountDownLatch(1);
    List<Thread> threads = new java.util.ArrayList<>();
    for (int t = 0; t < 8; t++) {
      int base = t * 10_000;
      Thread th = new Thread(() -> {
        try {
          go.await();
        } catch (InterruptedException e) {
          return;
        }
        for (int i = 0; i < 10_000; i++) {
          assertThat(r.resolve(new Req("t" + (base + i), null))).isSameAs(PRO);
        }
      });
      th.start();
      threads.add(th);
    }
    go.countDown();
    for (Thread th : threads) {
      th.join();
    }
    assertThat(r.cached()).isLessThanOrEqualTo(100 + 8); // at most one racing insert a thread past the bound
  }

  @Test void badSettingsAreRefusedWithTheirRule() {
    assertThatThrownBy(() -> PolicyResolver.<Req>builder(q -> PRO, null)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("whenUnresolved");
    assertThatThrownBy(() -> PolicyResolver.<Req>builder(q -> PRO, BLOCKED).maxEntries(0)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxEntries 0 is below 1; a cache holds at least one answer");
  }
}
