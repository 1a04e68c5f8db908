package dev.sluice.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.Ticker;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class HashedSlotRateLimiterTest {
  private static final long T0 = 1_700_000_000_000_000L;
  private final Policy p = Policy.fixedWindow("p", 3, Duration.ofMinutes(1));

  @Test
  void collidingKeysShareABudgetAndNothingIsEvicted() {
    HashedSlotRateLimiter l = HashedSlotRateLimiter.of(p, 1, ManualTicker.at(T0));
    assertThat(l.tryAcquire("a", 2).allowed()).isTrue();
    assertThat(l.tryAcquire("b").allowed()).isTrue();
    assertThat(l.tryAcquire("c").allowed()).isFalse();
  }

  @Test
  void aMillionKeysOccupyAtMostTheSlots() {
    ManualTicker t = ManualTicker.at(T0);
    HashedSlotRateLimiter l = HashedSlotRateLimiter.of(p, 1024, t);
    Set<Integer> used = new HashSet<>();
    for (int i = 0; i < 1_000_000; i++) {
      l.tryAcquire("k" + i);
      used.add(l.slotOf("k" + i));
    }
    assertThat(used).hasSize(1024);
    assertThat(l.occupiedSlots()).isEqualTo(1024);
  }

  @Test
  void seedsDifferPerInstance() {
    HashedSlotRateLimiter a = HashedSlotRateLimiter.of(p, 1 << 20);
    HashedSlotRateLimiter b = HashedSlotRateLimiter.of(p, 1 << 20);
    int same = 0;
    for (int i = 0; i < 100; i++) {
      if (a.slotOf("k" + i) == b.slotOf("k" + i)) {
        same++;
      }
    }
    assertThat(same).isLessThan(5);
  }

  @Test
  void aCallWithoutAKeyUsesOneSharedDefaultSlotThatIsThrottled() {
    HashedSlotRateLimiter l = HashedSlotRateLimiter.of(p, 16, ManualTicker.at(T0));
    assertThat(l.slotOf(null)).isEqualTo(16);
    assertThat(l.tryAcquire(null, 3).allowed()).isTrue();
    assertThat(l.tryAcquire(null).allowed()).isFalse();
    assertThat(l.tryAcquire("someone").allowed()).isTrue();
  }

  @Test
  void resetClearsTheBudgetButKeepsTheSlot() {
    ManualTicker t = ManualTicker.at(T0);
    HashedSlotRateLimiter l = HashedSlotRateLimiter.of(p, 8, t);
    l.tryAcquire("a", 3);
    assertThat(l.occupiedSlots()).isEqualTo(1);
    l.reset("a");
    assertThat(l.occupiedSlots()).isZero();
    assertThat(l.tryAcquire("a", 3).allowed()).isTrue();
    assertThat(l.slots()).isEqualTo(8);
  }

  @Test
  void refundsAndOverridesWork() {
    HashedSlotRateLimiter l = HashedSlotRateLimiter.of(p, 8, ManualTicker.at(T0));
    var d = l.tryAcquire("a", 3);
    assertThat(l.tryAcquire("a").allowed()).isFalse();
    l.refund(d.ticket().orElseThrow());
    assertThat(l.tryAcquire("a").allowed()).isTrue();
    Policy tight = Policy.fixedWindow("tight", 1, Duration.ofMinutes(1));
    assertThat(l.tryAcquire("a", 1, tight).allowed()).isTrue();
    assertThat(l.tryAcquire("a", 1, tight).allowed()).isFalse();
  }

  @Test
  void theSlidingLogCannotLiveInAFixedSlot() {
    assertThatThrownBy(() -> HashedSlotRateLimiter.of(Policy.slidingLog("log", 3, Duration.ofSeconds(1)), 8))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("policy 'log' uses sliding-log, whose state grows with its limit; HashedSlotRateLimiter keeps a fixed-size "
            + "state per key and runs fixed-window, sliding-window, token-bucket and gcra: use one of those, or sliding-log "
            + "on MemoryRateLimiter or Redis");
    assertThatThrownBy(() -> HashedSlotRateLimiter.of(p, 0)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("slots 0 is not positive; it must be at least 1");
  }

  /**
   * Issue 14.5: every distinct per-call override policy got an array of its own: 5,000 overrides took
   * about 211 MiB and occupiedSlots() said 5,000 with 1,024 slots. Arrays are keyed by budget family
   * (policy name and algorithm), as in the memory tier, so 10^5 distinct overrides of a few names
   * occupy a few arrays, and a family past the cap is refused with a clear error.
   */
  @Test
  void hashedSlotMemoryGrewWithDistinctOverridePolicies() {
    HashedSlotRateLimiter l = HashedSlotRateLimiter.of(p, 16, ManualTicker.at(T0));
    for (int i = 0; i < 100_000; i++) {
      Policy override = Policy.fixedWindow("override-" + i % 8, 1 + i, Duration.ofSeconds(1 + i % 60));
      l.tryAcquire("k" + i, 1, override);
    }
    assertThat(l.families()).isEqualTo(9); // p and the eight override names
    assertThat(l.occupiedSlots()).isLessThanOrEqualTo(8 * 17);

    // A budget is the policy name and the key: other numbers under one name share the state.
    l.tryAcquire("a", 3, p);
    assertThat(l.tryAcquire("a", 1, Policy.fixedWindow("p", 4, Duration.ofMinutes(1))).remaining()).isZero();

    HashedSlotRateLimiter capped = HashedSlotRateLimiter.of(p, 16, ManualTicker.at(T0));
    for (int i = 1; i < HashedSlotRateLimiter.MAX_FAMILIES; i++) {
      capped.tryAcquire("k", 1, Policy.fixedWindow("n" + i, 3, Duration.ofMinutes(1)));
    }
    assertThat(capped.families()).isEqualTo(HashedSlotRateLimiter.MAX_FAMILIES);
    assertThatThrownBy(() -> capped.tryAcquire("k", 1, Policy.fixedWindow("one-too-many", 3, Duration.ofMinutes(1))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("policy 'one-too-many' (FixedWindow) would be budget family 65 of this HashedSlotRateLimiter, which holds "
            + "at most 64 (a family is a policy name and an algorithm, each a fixed array of 17 slots): reuse a policy "
            + "name for overrides of its numbers, or give the other policies a limiter of their own");
    // The families it has keep working.
    assertThat(capped.tryAcquire("k", 1, Policy.fixedWindow("n1", 3, Duration.ofMinutes(1))).allowed()).isTrue();
  }
}
