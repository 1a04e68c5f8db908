package dev.sluice.compose;

import dev.sluice.ClockedRateLimiter;
import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.memory.MemoryRateLimiter;
import java.util.concurrent.atomic.AtomicLong;

/** Real limiters (the memory tier) wrapped to count what they were charged. */
final class Legs {
  private Legs() {}

  static MemoryRateLimiter memory(Policy p, Ticker t) {
    return MemoryRateLimiter.builder(p).ticker(t).build();
  }

  /** Net permits charged (allowed acquires minus applied refunds) and call counts. */
  interface Counting extends RateLimiter {
    long netCharged();

    long acquires();
  }

  /** A leg that is NOT a ClockedRateLimiter: the composition cannot pre-flight it, only charge and refund it. */
  static final class Plain implements Counting {
    final RateLimiter d;
    final AtomicLong net = new AtomicLong();
    final AtomicLong calls = new AtomicLong();
    final AtomicLong refunds = new AtomicLong();

    Plain(RateLimiter d) {
      this.d = d;
    }

    @Override public Policy policy() { return d.policy(); }

    @Override public Decision tryAcquire(String key, long permits, Policy p) {
      calls.incrementAndGet();
      Decision r = d.tryAcquire(key, permits, p);
      if (r.allowed()) {
        net.addAndGet(permits);
      }
      return r;
    }

    @Override public Decision peek(String key, Policy p) { return d.peek(key, p); }

    @Override public Refund refund(Ticket t) {
      refunds.incrementAndGet();
      Refund r = d.refund(t);
      if (r == Refund.APPLIED) {
        net.addAndGet(-t.permits());
      }
      return r;
    }

    /** Forwarded (not counted in {@link #netCharged}). */
    @Override public Settlement settle(Ticket t, long actual) { return d.settle(t, actual); }

    @Override public void reset(String key, Policy p) { d.reset(key, p); }

    @Override public long netCharged() { return net.get(); }

    @Override public long acquires() { return calls.get(); }
  }

  /** A clocked leg that counts, including how often it was handed an instant versus read its own clock. */
  static final class Clocked implements Counting, ClockedRateLimiter {
    final ClockedRateLimiter d;
    final AtomicLong net = new AtomicLong();
    final AtomicLong calls = new AtomicLong();
    final AtomicLong peeks = new AtomicLong();
    final AtomicLong ownClock = new AtomicLong();
    volatile long lastInstant;

    Clocked(ClockedRateLimiter d) {
      this.d = d;
    }

    @Override public Policy policy() { return d.policy(); }

    @Override public Ticker ticker() { return d.ticker(); }

    @Override public Decision tryAcquire(String key, long permits, Policy p) {
      ownClock.incrementAndGet();
      return tryAcquireAt(key, permits, p, d.ticker().nowMicros());
    }

    @Override public Decision tryAcquireAt(String key, long permits, Policy p, long now) {
      calls.incrementAndGet();
      lastInstant = now;
      Decision r = d.tryAcquireAt(key, permits, p, now);
      if (r.allowed()) {
        net.addAndGet(permits);
      }
      return r;
    }

    @Override public Decision peek(String key, Policy p) {
      ownClock.incrementAndGet();
      return d.peek(key, p);
    }

    @Override public Decision peekAt(String key, Policy p, long now) {
      peeks.incrementAndGet();
      lastInstant = now;
      return d.peekAt(key, p, now);
    }

    @Override public Refund refund(Ticket t) {
      ownClock.incrementAndGet();
      return refundAt(t, d.ticker().nowMicros());
    }

    /** Forwarded (not counted in {@link #netCharged}). */
    @Override public Settlement settle(Ticket t, long actual) {
      ownClock.incrementAndGet();
      return settleAt(t, actual, d.ticker().nowMicros());
    }

    @Override public Settlement settleAt(Ticket t, long actual, long now) {
      lastInstant = now;
      return d.settleAt(t, actual, now);
    }

    @Override public Refund refundAt(Ticket t, long now) {
      Refund r = d.refundAt(t, now);
      if (r == Refund.APPLIED) {
        net.addAndGet(-t.permits());
      }
      return r;
    }

    @Override public void reset(String key, Policy p) { d.reset(key, p); }

    @Override public long netCharged() { return net.get(); }

    @Override public long acquires() { return calls.get(); }
  }

  /** A leg that throws (a broken custom clock, a third-party leg that cannot answer). */
  /** A leg that throws {@code error} from every call: an unchecked exception, an Error, or a checked exception thrown sneakily. */
  static class Throwing implements RateLimiter {
    final Policy policy;
    final Throwable error;

    Throwing(Policy policy, Throwable error) {
      this.policy = policy;
      this.error = error;
    }

    @Override public Policy policy() { return policy; }

    @Override public Decision tryAcquire(String key, long permits, Policy p) { throw Legs.<RuntimeException>sneaky(error); }

    @Override public Decision peek(String key, Policy p) { throw Legs.<RuntimeException>sneaky(error); }

    @Override public Refund refund(Ticket ticket) { throw Legs.<RuntimeException>sneaky(error); }

    @Override public void reset(String key, Policy p) {}
  }

  /** Throws {@code t} whatever its type: the compiler takes it for a {@code T}. */
  @SuppressWarnings("unchecked")
  static <T extends Throwable> T sneaky(Throwable t) throws T {
    throw (T) t;
  }

  /** A ticker that counts its readings. */
  static final class CountingTicker implements Ticker {
    final Ticker d;
    final AtomicLong reads = new AtomicLong();

    CountingTicker(Ticker d) {
      this.d = d;
    }

    @Override public long nowMicros() {
      reads.incrementAndGet();
      return d.nowMicros();
    }
  }
}
