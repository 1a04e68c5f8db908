package dev.sluice.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** A reload keeps every count: a name that stays keeps its limiter and what the front end keeps for it. */
class PolicyTableTest {
  static Policy fixed(String name, int limit) {
    return Policy.fixedWindow(name, limit, Duration.ofMinutes(1));
  }

  private final AtomicInteger attached = new AtomicInteger();

  private PolicyTable<String> table(Store store, List<Policy> policies) {
    return new PolicyTable<>(store, policies, p -> p.name() + "#" + attached.incrementAndGet(), a -> RateLimitListener.NONE);
  }

  @Test void aReloadKeepsTheCountsOfANameThatStays() {
    try (Store store = Store.memory(100, Ticker.system())) {
      PolicyTable<String> t = table(store, List.of(fixed("api", 5), fixed("login", 3)));
      RateLimiter api = t.entry("api").limiter();
      for (int i = 0; i < 4; i++) {
        assertThat(api.tryAcquire("user:1").allowed()).isTrue();
      }
      String apiAttachment = t.entry("api").attachment();

      PolicyTable.Change c = t.reload(List.of(fixed("api", 6), fixed("search", 2)));

      assertThat(c.changed()).containsExactly("api");
      assertThat(c.added()).containsExactly("search");
      assertThat(c.removed()).containsExactly("login");
      assertThat(c).hasToString("changed: api; added: search; removed: login");
      assertThat(t.entry("api").limiter()).isSameAs(api);
      assertThat(t.entry("api").attachment()).isEqualTo(apiAttachment);
      assertThat(t.entry("api").policy().limit()).isEqualTo(6);
      assertThat(t.entry("login")).isNull();
      assertThat(t.policies()).extracting(Policy::name).containsExactly("api", "search");
      // 4 of 6 spent before the reload: two more, then refused under the new numbers.
      Policy now = t.entry("api").policy();
      assertThat(api.tryAcquire("user:1", 1, now).allowed()).isTrue();
      assertThat(api.tryAcquire("user:1", 1, now).allowed()).isTrue();
      assertThat(api.tryAcquire("user:1", 1, now).allowed()).isFalse();
    }
  }

  @Test void anUnchangedReloadChangesNothing() {
    try (Store store = Store.memory(100, Ticker.system())) {
      PolicyTable<String> t = table(store, List.of(fixed("api", 5)));
      assertThat(t.reload(List.of(fixed("api", 5)))).hasToString("changed: none; added: none; removed: none");
      assertThat(attached).hasValue(1);
    }
  }

  @Test void aPolicyTheStoreRefusesLeavesTheTableAsItWas() {
    List<String> checked = new ArrayList<>();
    Store refusing = new Store() {
      private final Store memory = Store.memory(100, Ticker.system());
      @Override public String name() { return "refusing"; }
      @Override public String describe() { return "a store that refuses the policy 'bad'"; }
      @Override public boolean shared() { return false; }
      @Override public RateLimiter limiter(Policy policy, RateLimitListener listener) { return memory.limiter(policy, listener); }
      @Override public void check(List<Policy> policies) {
        policies.forEach(p -> checked.add(p.name()));
        if (policies.stream().anyMatch(p -> p.name().equals("bad"))) {
          throw new IllegalArgumentException("policy 'bad' is not supported here");
        }
      }
    };
    PolicyTable<String> t = table(refusing, List.of(fixed("api", 5)));
    assertThatThrownBy(() -> t.reload(List.of(fixed("api", 1), fixed("bad", 1)))).hasMessage("policy 'bad' is not supported here");
    assertThat(t.entry("api").policy().limit()).isEqualTo(5);
    assertThat(t.entry("bad")).isNull();
    assertThat(checked).containsExactly("api", "api", "bad");
  }
}
