package dev.sluice.compose;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.memory.MemoryRateLimiter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * In one process (every refund goes through the cache), a near-cache never changes an outcome: for
 * any trace, each call is allowed exactly when the store alone would have allowed it. This holds
 * because a refusal's retry-after is exact (the store refuses at least those permits until then,
 * whatever else is charged meanwhile) and everything that could free permits early invalidates.
 */
class NearCachePropertyTest {
  static final String[] KEYS = {"a", "b", "c"};

  @Provide
  Arbitrary<Policy> policies() {
    return Arbitraries.of(
        Policy.fixedWindow("fw", 4, Duration.ofSeconds(1)),
        Policy.slidingWindow("sw", 5, Duration.ofSeconds(1)),
        Policy.tokenBucket("tb", 4, 3, Duration.ofSeconds(1)),
        Policy.gcra("gcra", 3, Duration.ofSeconds(1), 4));
  }

  @Property(tries = 200)
  void aNearCacheNeverChangesAnOutcome(@ForAll("policies") Policy policy, @ForAll long seed) {
    replay(policy, seed);
  }

  /**
   * Issue 12: the store refused at t=3,999,664 with an exact wait of 336 us, raised to the old 1 ms
   * floor; the near-cache kept refusing until t=4,000,664 although the store allowed at 4,000,171.
   */
  @Example
  void theNearCacheRefusedPastTheStoresExactRetryWhenTheFloorRaisedIt() {
    replay(Policy.slidingWindow("sw", 5, Duration.ofSeconds(1)), 19489260428429L);
  }

  private static void replay(Policy policy, long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    ManualTicker ticker = ManualTicker.at(CompositionTest.T0);
    MemoryRateLimiter behind = Legs.memory(policy, ticker);
    MemoryRateLimiter alone = Legs.memory(policy, ticker);
    NearCachedRateLimiter cached = NearCachedRateLimiter.builder(behind).ticker(ticker).maxEntries(2).build();
    List<Ticket[]> tickets = new ArrayList<>();

    for (int step = 0; step < 150; step++) {
      int op = r.nextInt(10);
      if (op < 7) {
        String k = KEYS[r.nextInt(KEYS.length)];
        long n = 1 + r.nextInt(3);
        Decision c = cached.tryAcquire(k, n);
        Decision a = alone.tryAcquire(k, n);
        assertThat(c.allowed()).as("step %d: %s x%d (%s)", step, k, n, c).isEqualTo(a.allowed());
        if (c.path() != Path.NEAR_CACHE) {
          assertThat(c).isEqualTo(a);
        }
        if (c.allowed()) {
          tickets.add(new Ticket[] {c.ticket().orElseThrow(), a.ticket().orElseThrow()});
        }
      } else if (op < 8) {
        if (!tickets.isEmpty()) {
          Ticket[] t = tickets.remove(r.nextInt(tickets.size()));
          assertThat(cached.refund(t[0])).isEqualTo(alone.refund(t[1]));
        }
      } else {
        ticker.advanceMicros(r.nextLong(400_000));
      }
    }
  }
}
