package dev.sluice.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Decision;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.Ticker;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class CeilingRateLimiterTest {
  private final ManualTicker t = ManualTicker.at(1_700_000_000_000_000L);
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

  /**
   * Issue 14.4: the ceiling key lived in the same bounded table as the identities. When its window
   * ended and it was reclaimed, a sprayed key took its place, and from then on every call, tracked
   * users included, was refused KEY_TABLE_FULL (0 of 55 admitted over 55 s). The ceiling's key is
   * pinned outside maxKeys: a spray fills the table and is refused, the tracked users never are.
   */
  @Test
  void aSprayLockedEveryoneOutOfTheCeiling() {
    Policy identity = Policy.fixedWindow("identity", 100, Duration.ofHours(1));
    Policy ceiling = Policy.fixedWindow("ceiling", 1_000, Duration.ofSeconds(1));
    MemoryRateLimiter inner = MemoryRateLimiter.builder(identity).ticker(t).maxKeys(100).build();
    CeilingRateLimiter l = CeilingRateLimiter.of(inner, ceiling);
    for (int u = 0; u < 10; u++) {
      assertThat(l.tryAcquire("user-" + u).allowed()).isTrue();
    }
    int admitted = 0;
    int sprayAdmitted = 0;
    for (int s = 0; s < 55; s++) {
      t.advance(Duration.ofSeconds(1)); // the ceiling's window ends and its entry becomes reclaimable
      for (int i = 0; i < 200; i++) {
        if (l.tryAcquire("spray-" + s + "-" + i).allowed()) {
          sprayAdmitted++;
        }
      }
      if (l.tryAcquire("user-" + s % 10).allowed()) {
        admitted++;
      }
      assertThat(inner.trackedKeys()).isLessThanOrEqualTo(100);
    }
    assertThat(admitted).as("tracked users admitted over 55 s").isEqualTo(55);
    assertThat(sprayAdmitted).as("the spray filled the 90 free places and no more").isEqualTo(90);
    // A full table's wait is for a place: the end of the users' window (opened at the start), not the
    // pinned ceiling's, which ends every second and frees none.
    long identityEnd = 1_700_000_000_000_000L + Duration.ofHours(1).toNanos() / 1_000;
    Decision full = l.tryAcquire("spray-new");
    assertThat(full.reason()).isEqualTo(dev.sluice.Reason.KEY_TABLE_FULL);
    assertThat(full.resetAtMicros()).isEqualTo(identityEnd);
    assertThat(l.peek("spray-new").retryAfterMicros()).isEqualTo(identityEnd - t.nowMicros());
  }
}
