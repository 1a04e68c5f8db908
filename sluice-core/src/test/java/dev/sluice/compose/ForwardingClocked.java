package dev.sluice.compose;

import dev.sluice.ClockedRateLimiter;
import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticker;
import dev.sluice.Ticket;

/** Forwards everything to a clocked limiter; tests override what they observe. */
class ForwardingClocked implements ClockedRateLimiter {
  final ClockedRateLimiter d;

  ForwardingClocked(ClockedRateLimiter d) {
    this.d = d;
  }

  @Override public Policy policy() { return d.policy(); }

  @Override public Ticker ticker() { return d.ticker(); }

  @Override public Decision tryAcquire(String key, long permits, Policy p) { return d.tryAcquire(key, permits, p); }

  @Override public Decision tryAcquireAt(String key, long permits, Policy p, long now) { return d.tryAcquireAt(key, permits, p, now); }

  @Override public Decision peek(String key, Policy p) { return d.peek(key, p); }

  @Override public Decision peekAt(String key, Policy p, long now) { return d.peekAt(key, p, now); }

  @Override public Refund refund(Ticket t) { return d.refund(t); }

  @Override public Refund refundAt(Ticket t, long now) { return d.refundAt(t, now); }

  @Override public Settlement settle(Ticket t, long actual) { return d.settle(t, actual); }

  @Override public Settlement settleAt(Ticket t, long actual, long now) { return d.settleAt(t, actual, now); }

  @Override public void reset(String key, Policy p) { d.reset(key, p); }
}
