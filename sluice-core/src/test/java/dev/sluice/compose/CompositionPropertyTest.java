package dev.sluice.compose;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.ClockedRateLimiter;
import dev.sluice.Decision;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.RateLimiters;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;

/**
 * A composition is exactly "every leg admits, or nothing happened": after any trace of acquires,
 * composed refunds and clock moves, every leg's state equals that of a twin limiter that saw only
 * the admitted calls and their refunds, and each composed call was admitted exactly when every twin
 * would have admitted it.
 */
class CompositionPropertyTest {
  static final String[] KEYS = {"a", "b"};

  static List<Policy> policies() {
    return List.of(
        Policy.fixedWindow("fw", 5, Duration.ofSeconds(1)),
        Policy.slidingWindow("sw", 6, Duration.ofSeconds(2)),
        Policy.tokenBucket("tb", 4, 2, Duration.ofSeconds(1)),
        Policy.gcra("gcra", 3, Duration.ofSeconds(1), 3));
  }

  @Property(tries = 200)
  void aRefusedCompositionLeavesNoTraceOnAnyLeg(@ForAll long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    ManualTicker ticker = ManualTicker.at(CompositionTest.T0);
    ManualTicker twinTicker = ManualTicker.at(CompositionTest.T0);
    List<Policy> ps = policies();
    List<RateLimiter> legs = new ArrayList<>();
    List<ClockedRateLimiter> twins = new ArrayList<>();
    for (int i = 0; i < ps.size(); i++) {
      ClockedRateLimiter m = Legs.memory(ps.get(i), ticker);
      // Half the legs are plain (no pre-flight: charged and compensated), half clocked.
      legs.add(i % 2 == 0 ? m : new Legs.Plain(m));
      twins.add(Legs.memory(ps.get(i), twinTicker));
    }
    Composition all = RateLimiters.all(legs.toArray(new RateLimiter[0]));
    List<Ticket> composed = new ArrayList<>();
    List<Ticket[]> twinTickets = new ArrayList<>();

    for (int step = 0; step < 80; step++) {
      int op = r.nextInt(10);
      if (op < 6) {
        String k = KEYS[r.nextInt(KEYS.length)];
        long n = 1 + r.nextInt(3);
        boolean expected = true;
        for (ClockedRateLimiter t : twins) {
          Decision p = t.peek(k);
          expected &= p.allowed() && p.remaining() >= n;
        }
        Decision d = all.tryAcquire(k, n);
        assertThat(d.allowed()).as("step %d: %s x%d", step, k, n).isEqualTo(expected);
        if (expected) {
          Ticket[] tt = new Ticket[twins.size()];
          for (int i = 0; i < twins.size(); i++) {
            tt[i] = twins.get(i).tryAcquire(k, n).ticket().orElseThrow();
          }
          composed.add(d.ticket().orElseThrow());
          twinTickets.add(tt);
        }
      } else if (op < 8) {
        if (!composed.isEmpty()) {
          int i = r.nextInt(composed.size());
          all.refund(composed.get(i));
          for (int j = 0; j < twins.size(); j++) {
            twins.get(j).refund(twinTickets.get(i)[j]);
          }
          composed.remove(i);
          twinTickets.remove(i);
        }
      } else {
        long micros = r.nextLong(700_000);
        ticker.advanceMicros(micros);
        twinTicker.advanceMicros(micros);
      }
      for (String k : KEYS) {
        for (int i = 0; i < legs.size(); i++) {
          assertThat(legs.get(i).peek(k)).as("step %d, leg %s, key %s", step, ps.get(i).name(), k).isEqualTo(twins.get(i).peek(k));
        }
      }
    }
    assertThat(all.stats().legErrors()).isZero();
    assertThat(all.stats().failedCompensations()).isZero();
  }
}
