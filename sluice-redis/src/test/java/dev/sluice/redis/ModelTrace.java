package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Ticket;
import dev.sluice.model.Outcome;
import dev.sluice.model.ReferenceModel;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Replays a seeded random trace through the reference model and through a limiter, demanding equal
 * decisions, stamps and refund results. (The conformance kit does this too; this one exists so the
 * scripts could be checked before the kit landed, and it also aims at the arithmetic edges.)
 */
final class ModelTrace {
  private final Map<String, long[]> states = new HashMap<>();
  private final Outcome out = new Outcome();

  Decision expectAcquire(Policy p, String key, long now, long permits) {
    ReferenceModel.acquire(p.algorithm(), state(p, key), now, permits, out);
    return out.allowed() ? Decision.allowed(p, out.remaining(), out.resetAt(), new Ticket(p, key, permits, out.stamp()))
        : Decision.refused(p, Reason.LIMIT_EXCEEDED, out.remaining(), out.resetAt(), out.retryAfter());
  }

  long lastStamp() {
    return out.stamp();
  }

  Decision expectPeek(Policy p, String key, long now) {
    ReferenceModel.peek(p.algorithm(), state(p, key), now, out);
    return out.allowed() ? Decision.allowed(p, out.remaining(), out.resetAt(), null)
        : Decision.refused(p, Reason.LIMIT_EXCEEDED, out.remaining(), out.resetAt(), out.retryAfter());
  }

  Refund expectRefund(Ticket t, long now) {
    ReferenceModel.refund(t.policy().algorithm(), state(t.policy(), t.key()), now, t.permits(), t.stamp(), out);
    return out.wrote() ? Refund.APPLIED : Refund.NO_EFFECT;
  }

  void reset(Policy p, String key) {
    states.remove(p.name() + "\u0000" + key);
  }

  private long[] state(Policy p, String key) {
    return states.computeIfAbsent(p.name() + "\u0000" + key, k -> new long[ReferenceModel.STATE_SIZE]);
  }

  /**
   * Runs {@code events} random events over {@code policies} (the first is the limiter's default, the
   * rest per-call overrides) and {@code keys}, with clock steps drawn around the policies' windows.
   */
  static void replay(RateLimiter limiter, ManualTicker ticker, List<Policy> policies, long[] steps, int events, long seed) {
    ModelTrace model = new ModelTrace();
    Random rnd = new Random(seed);
    String[] keys = {"k-" + seed, "k2-" + seed, "\u00e9 k3 \ud83d\ude00"};
    List<Ticket> tickets = new ArrayList<>();
    for (int i = 0; i < events; i++) {
      Policy p = policies.get(rnd.nextInt(policies.size()));
      String key = keys[rnd.nextInt(keys.length)];
      int what = rnd.nextInt(100);
      String at = "event " + i + " seed " + seed + " policy " + p + " now " + ticker.nowMicros();
      if (what < 55) {
        long permits = 1 + (rnd.nextInt(4) == 0 ? (long) (rnd.nextDouble() * p.limit()) : rnd.nextInt((int) Math.min(3, p.limit())));
        permits = Math.min(permits, p.limit());
        Decision expected = model.expectAcquire(p, key, ticker.nowMicros(), permits);
        Decision actual = limiter.tryAcquire(key, permits, p);
        assertThat(actual).as(at + " acquire " + permits).isEqualTo(expected);
        if (actual.allowed()) {
          assertThat(actual.ticket()).as(at).isPresent();
          assertThat(actual.ticket().get().stamp()).as(at + " stamp").isEqualTo(model.lastStamp());
          tickets.add(actual.ticket().get());
        }
      } else if (what < 70) {
        Decision expected = model.expectPeek(p, key, ticker.nowMicros());
        assertThat(limiter.peek(key, p)).as(at + " peek").isEqualTo(expected);
      } else if (what < 80 && !tickets.isEmpty()) {
        Ticket t = tickets.remove(rnd.nextInt(tickets.size()));
        Refund expected = model.expectRefund(t, ticker.nowMicros());
        assertThat(limiter.refund(t)).as(at + " refund " + t).isEqualTo(expected);
      } else if (what < 82) {
        model.reset(p, key);
        limiter.reset(key, p);
      } else {
        ticker.advanceMicros(steps[rnd.nextInt(steps.length)] + rnd.nextInt(3) - 1);
      }
    }
  }
}
