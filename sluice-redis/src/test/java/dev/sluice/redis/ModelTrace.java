package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Ticket;
import dev.sluice.tck.ReferenceLimiter;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Replays a seeded random trace through the reference model ({@link ReferenceLimiter}) and through a
 * limiter, demanding equal decisions, stamps, refund and settlement results. The conformance kit does this with
 * its standard policies; this one aims at the arithmetic edges (huge limits, windows and rates, 1 ms
 * windows) and at several policies mixed on one limiter.
 */
final class ModelTrace {
  private ModelTrace() {}

  static void replay(RateLimiter limiter, ManualTicker ticker, List<Policy> policies, long[] steps, int events, long seed) {
    ReferenceLimiter model = new ReferenceLimiter();
    Random rnd = new Random(seed);
    String[] keys = {"k-" + seed, "k2-" + seed, "\u00e9 k3 \ud83d\ude00"};
    List<Ticket[]> tickets = new ArrayList<>();
    for (int i = 0; i < events; i++) {
      Policy p = policies.get(rnd.nextInt(policies.size()));
      String key = keys[rnd.nextInt(keys.length)];
      int what = rnd.nextInt(100);
      long now = ticker.nowMicros();
      String at = "event " + i + " seed " + seed + " policy " + p + " now " + now;
      if (what < 55) {
        long permits = 1 + (rnd.nextInt(4) == 0 ? (long) (rnd.nextDouble() * p.limit()) : rnd.nextInt((int) Math.min(3, p.limit())));
        permits = Math.min(permits, p.limit());
        Decision expected = model.acquire(p, key, permits, now);
        Decision actual = limiter.tryAcquire(key, permits, p);
        assertThat(actual).as(at + " acquire " + permits).isEqualTo(expected);
        if (actual.allowed()) {
          assertThat(actual.ticket().orElseThrow().stamp()).as(at + " stamp").isEqualTo(expected.ticket().orElseThrow().stamp());
          tickets.add(new Ticket[] {actual.ticket().get(), expected.ticket().get()});
        }
      } else if (what < 70) {
        assertThat(limiter.peek(key, p)).as(at + " peek").isEqualTo(model.peek(p, key, now));
      } else if (what < 80 && !tickets.isEmpty()) {
        Ticket[] t = tickets.remove(rnd.nextInt(tickets.size()));
        if (rnd.nextBoolean()) {
          long limit = t[1].policy().limit();
          // (a whole limit only for small limits: sliding-log.lua refuses an entry of 2^52 permits
          // as corrupt, which an acquire of the whole limit of a 2^52 policy writes too)
          long cost = rnd.nextInt(3) == 0 && limit < 1_000 ? limit : Math.min(limit, (long) (rnd.nextDouble() * limit));
          assertThat(limiter.settle(t[0], cost)).as(at + " settle " + t[1] + " at " + cost).isEqualTo(model.settle(t[1], cost, now));
        } else {
          assertThat(limiter.refund(t[0])).as(at + " refund " + t[1]).isEqualTo(model.refund(t[1], now));
        }
      } else if (what < 82) {
        model.reset(p, key);
        limiter.reset(key, p);
      } else {
        ticker.advanceMicros(steps[rnd.nextInt(steps.length)] + rnd.nextInt(3) - 1);
      }
    }
  }
}
