package dev.sluice.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Decision;
import dev.sluice.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.Ticker;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class CeilingRateLimiterTest {
  private final ManualTicker t = Ticker.manual(1_700_000_000_000_000L);
  private final Policy perIp = Policy.tokenBucket("per-ip", 5, 5, Duration.ofSeconds(1));
  private final Policy global = Policy.tokenBucket("global", 8, 8, Duration.ofSeconds(1));

  @Test
  void spoofedIdentitiesAreStillHeldToTheCeiling() {
    CeilingRateLimiter l = CeilingRateLimiter.of(MemoryRateLimiter.builder(perIp).ticker(t).build(), global);
    int admitted = 0;
    for (int i = 0; i < 100; i++) {
      if (l.tryAcquire("spoofed-" + i).allowed()) {
        admitted++;
      }
    }
    assertThat(admitted).isEqualTo(8);
  }

  @Test
  void aCeilingRefusalLeavesTheIdentityUncharged() {
    MemoryRateLimiter inner = MemoryRateLimiter.builder(perIp).ticker(t).build();
    CeilingRateLimiter l = CeilingRateLimiter.of(inner, global);
    for (int i = 0; i < 8; i++) {
      l.tryAcquire("other-" + i);
    }
    Decision refused = l.tryAcquire("victim");
    assertThat(refused.allowed()).isFalse();
    assertThat(refused.policy()).isEqualTo(global);
    assertThat(inner.peek("victim").remaining()).isEqualTo(5);
  }

  @Test
  void thePerIdentityLimitStillApplies() {
    CeilingRateLimiter l = CeilingRateLimiter.of(MemoryRateLimiter.builder(perIp).ticker(t).build(), global);
    for (int i = 0; i < 5; i++) {
      assertThat(l.tryAcquire("one").allowed()).isTrue();
    }
    Decision d = l.tryAcquire("one");
    assertThat(d.allowed()).isFalse();
    assertThat(d.policy()).isEqualTo(perIp);
  }

  @Test
  void theCeilingNeedsItsOwnName() {
    assertThatThrownBy(() -> CeilingRateLimiter.of(MemoryRateLimiter.builder(perIp).build(), perIp))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("ceiling policy name 'per-ip' equals the identity policy's; give the ceiling its own name so the budgets stay apart");
  }
}
