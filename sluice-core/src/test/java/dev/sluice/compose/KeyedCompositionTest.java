package dev.sluice.compose;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Decision;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.RateLimiters;
import dev.sluice.Ticker;
import dev.sluice.memory.MemoryRateLimiter;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class KeyedCompositionTest {
  final ManualTicker ticker = ManualTicker.at(CompositionTest.T0);
  final AtomicInteger built = new AtomicInteger();

  Composition keyed(int slots, long limit) {
    return Composition.builder().slots(slots).ticker(ticker)
        .legFactory(slot -> {
          built.incrementAndGet();
          return MemoryRateLimiter.builder(Policy.gcra("tenant", limit, Duration.ofSeconds(1), limit)).ticker(ticker).maxKeys(4).build();
        })
        .legFactory(slot -> MemoryRateLimiter.builder(Policy.fixedWindow("tenant-hourly", 10 * limit, Duration.ofHours(1))).ticker(ticker).maxKeys(4).build())
        .build();
  }

  @Test
  void aMillionDistinctKeysBuildNoMoreThanSlotsLimiterSets() {
    int slots = 1024;
    Composition c = keyed(slots, 5);
    int allowed = 0;
    for (int i = 0; i < 1_000_000; i++) {
      if (c.tryAcquire("tenant-" + i).allowed()) {
        allowed++;
      }
    }
    assertThat(built.get()).isLessThanOrEqualTo(slots);
    CompositionStats s = c.stats();
    assertThat(s.keyed()).isTrue();
    assertThat(s.slots()).isEqualTo(slots);
    assertThat(s.legs()).isEqualTo(2);
    assertThat(s.builtSlots()).isEqualTo(built.get()).isLessThanOrEqualTo(slots);
    // A million keys spread over every slot (the expected number of untouched slots is ~0).
    assertThat(s.builtSlots()).isEqualTo(slots);
    // Keys share slot budgets, so at most slots x 5 permits were admitted in this one instant.
    assertThat(allowed).isEqualTo(slots * 5);
    assertThat(s.available()).as("no single availability when keyed: absent, not zero").isEmpty();
    assertThat(s.decisions()).isEqualTo(1_000_000);
    assertThat(s.rejectionRate()).isEqualTo((1_000_000 - allowed) / 1_000_000.0);
  }

  @Test
  void keysThatCollideShareABudgetAndOthersDoNot() {
    Composition c = keyed(8, 2);
    String a = "k0";
    String same = null;
    String other = null;
    for (int i = 1; i < 1000 && (same == null || other == null); i++) {
      String k = "k" + i;
      if (c.slotOf(k) == c.slotOf(a)) {
        same = same == null ? k : same;
      } else {
        other = other == null ? k : other;
      }
    }
    assertThat(c.limitersFor(same)).containsExactlyElementsOf(c.limitersFor(a));
    assertThat(c.tryAcquire(a).allowed()).isTrue();
    assertThat(c.tryAcquire(same).allowed()).isTrue();
    assertThat(c.tryAcquire(a).allowed()).as("the colliding key spent the shared budget").isFalse();
    assertThat(c.tryAcquire(other).allowed()).isTrue();
  }

  @Test
  void eachInstanceHasItsOwnSeed() {
    Composition c1 = keyed(1 << 16, 2);
    Composition c2 = keyed(1 << 16, 2);
    int same = 0;
    for (int i = 0; i < 100; i++) {
      if (c1.slotOf("key-" + i) == c2.slotOf("key-" + i)) {
        same++;
      }
    }
    assertThat(same).isLessThan(5);
  }

  @Test
  void aMissingKeyGoesToOneSharedDefaultSlotThrottledNotUnlimited() {
    Composition c = keyed(16, 2);
    assertThat(c.tryAcquire(null).allowed()).isTrue();
    assertThat(c.tryAcquire(null).allowed()).isTrue();
    Decision third = c.tryAcquire(null);
    assertThat(third.allowed()).isFalse();
    assertThat(c.limitersFor(null)).hasSize(2);
    // Keys proper are still validated.
    assertThatThrownBy(() -> c.tryAcquire("")).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("key is empty; a key must be a non-blank string");
  }

  @Test
  void resetClearsBudgetsButKeepsTheSlots() {
    Composition c = keyed(4, 1);
    Set<List<RateLimiter>> before = new HashSet<>();
    for (int i = 0; i < 50; i++) {
      c.tryAcquire("t" + i);
      before.add(c.limitersFor("t" + i));
    }
    int builtBefore = c.stats().builtSlots();
    assertThat(c.tryAcquire("t0").allowed()).isFalse();

    c.reset();

    assertThat(c.stats().builtSlots()).isEqualTo(builtBefore);
    assertThat(built.get()).isEqualTo(builtBefore);
    Set<List<RateLimiter>> after = new HashSet<>();
    for (int i = 0; i < 50; i++) {
      after.add(c.limitersFor("t" + i));
    }
    assertThat(after).isEqualTo(before);
    assertThat(c.tryAcquire("t0").allowed()).isTrue();
  }

  @Test
  void closeReleasesBuiltSlotsClosesTheirLegsAndRefusesReuse() {
    AtomicInteger closed = new AtomicInteger();
    Composition c = Composition.builder().slots(4).ticker(ticker)
        .legFactory(slot -> new ClosingLeg(MemoryRateLimiter.builder(Policy.fixedWindow("x", 1, Duration.ofMinutes(1))).ticker(ticker).build(), closed))
        .build();
    for (int i = 0; i < 40; i++) {
      c.tryAcquire("t" + i);
    }
    c.tryAcquire(null);
    int builtSlots = c.stats().builtSlots();
    assertThat(builtSlots).isEqualTo(5); // four hashed slots and the default slot

    c.close();

    assertThat(closed.get()).isEqualTo(builtSlots);
    assertThat(c.stats().builtSlots()).isZero();
    assertThatThrownBy(() -> c.tryAcquire("t1")).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
  }

  @Test
  void configurationConflictsFailFast() {
    var leg = MemoryRateLimiter.builder(Policy.fixedWindow("x", 1, Duration.ofMinutes(1))).build();
    assertThatThrownBy(() -> Composition.builder().leg(leg).slots(8).build()).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("needs leg factories, not instances");
    assertThatThrownBy(() -> Composition.builder().leg(leg).legFactory(s -> leg).build()).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("not both");
    assertThatThrownBy(() -> Composition.builder().slots(0)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("slots 0 is not positive; it must be at least 1");
    assertThatThrownBy(() -> RateLimiters.keyed(8, s -> null).tryAcquire("a")).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("returned null");
    // A leg on another clock than the composition's is refused when its slot is built.
    Composition mixed = Composition.builder().slots(2).ticker(ticker)
        .legFactory(s -> MemoryRateLimiter.builder(Policy.fixedWindow("x", 1, Duration.ofMinutes(1))).build()).build();
    assertThatThrownBy(() -> mixed.tryAcquire("a")).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("reads another ticker");
  }

  /** A leg that records being closed. */
  static final class ClosingLeg extends ForwardingClocked implements AutoCloseable {
    final AtomicInteger closed;

    ClosingLeg(MemoryRateLimiter d, AtomicInteger closed) {
      super(d);
      this.closed = closed;
    }

    @Override public void close() {
      closed.incrementAndGet();
    }
  }

  @Test
  void threadsRacingForFreshSlotsBuildEachSlotOnce() throws Exception {
    int slots = 64;
    Composition c = keyed(slots, 1_000);
    int threads = 16;
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(threads);
    java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
    List<java.util.concurrent.Future<?>> fs = new java.util.ArrayList<>();
    for (int t = 0; t < threads; t++) {
      int id = t;
      fs.add(pool.submit(() -> {
        go.await();
        for (int i = 0; i < 5_000; i++) {
          c.tryAcquire("t" + id + "-" + i);
        }
        return null;
      }));
    }
    go.countDown();
    for (var f : fs) {
      f.get(60, java.util.concurrent.TimeUnit.SECONDS);
    }
    pool.shutdown();
    assertThat(built.get()).isEqualTo(c.stats().builtSlots()).isEqualTo(slots);
  }
}
