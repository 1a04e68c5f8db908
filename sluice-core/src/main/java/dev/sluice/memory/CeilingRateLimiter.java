package dev.sluice.memory;

import dev.sluice.ClockedRateLimiter;
import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.compose.AllOf;
import dev.sluice.internal.Checks;
import java.util.List;

/**
 * Per-identity limit plus a global ceiling (caisson's per-IP and global buckets): every call is
 * charged to its caller's key under the identity policy and to one fixed key under the ceiling
 * policy, whoever the caller claims to be. A spoofed, rotated or collapsed identity (every client
 * behind one NAT, or an attacker inventing keys) is still held to the ceiling. This is the one
 * implementation of a global ceiling; sluice-http's {@code globalCeiling} is this class.
 *
 * <p>The two legs are one {@link AllOf} call: decided at one clock reading when the limiters are
 * clocked (the memory tier; a limiter that is not, a shared store reading its server's clock, decides
 * on its own clock), pre-flighted where they can be, and a refusal of either leaves neither charged. The decision returned is the identity leg's when both allow (its ticket
 * refunds the identity leg only: the ceiling charge stays, which errs on the strict side) and the
 * refusing leg's otherwise; {@link #charge} returns both legs' decisions.
 *
 * <p><b>Never crowded out.</b> When the ceiling lives in a {@link MemoryRateLimiter}, its key is
 * {@linkplain MemoryRateLimiter#pin pinned}: it takes no place among {@code maxKeys}, so a spray of
 * new identities that fills the table is refused itself and can never take the ceiling's place,
 * which would refuse every call, tracked identities included, with {@code KEY_TABLE_FULL}.
 */
public final class CeilingRateLimiter implements ClockedRateLimiter {
  /** The key every call is charged to under the ceiling policy, unless the builder names another. */
  public static final String CEILING_KEY = "*";

  private final RateLimiter limiter;
  private final ClockedRateLimiter clocked;
  private final Policy identity;
  private final RateLimiter ceilingLimiter;
  private final ClockedRateLimiter ceilingClocked;
  private final Policy ceiling;
  private final String ceilingKey;
  private final Ticker ticker;
  private final RateLimitListener listener;

  private CeilingRateLimiter(Builder b) {
    this.listener = b.listener;
    this.limiter = b.limiter;
    this.clocked = b.limiter instanceof ClockedRateLimiter c ? c : null;
    this.identity = b.identity != null ? b.identity : b.limiter.policy();
    this.ceilingLimiter = b.ceilingLimiter != null ? b.ceilingLimiter : b.limiter;
    this.ceilingClocked = ceilingLimiter instanceof ClockedRateLimiter c && (clocked == null || c.ticker() == clocked.ticker()) ? c : null;
    this.ceiling = b.ceiling;
    this.ceilingKey = b.ceilingKey;
    this.ticker = clocked != null ? clocked.ticker() : ceilingClocked != null ? ceilingClocked.ticker() : Ticker.system();
    if (ceilingLimiter instanceof MemoryRateLimiter m) {
      m.pin(ceilingKey, ceiling);
    }
  }

  /**
   * Limits each key by {@code limiter}'s policy and all keys together by {@code ceiling}, both in
   * {@code limiter}. The two policies must have different names (they share the limiter's store).
   */
  public static CeilingRateLimiter of(ClockedRateLimiter limiter, Policy ceiling) {
    return builder(limiter, ceiling).build();
  }

  /** A ceiling of {@code ceiling} over the identities of {@code limiter}; the rest as {@link #of}. */
  public static Builder builder(RateLimiter limiter, Policy ceiling) {
    return new Builder(Checks.notNull("limiter", limiter), Checks.notNull("ceiling", ceiling));
  }

  public Policy ceiling() {
    return ceiling;
  }

  /** The key the ceiling is charged to. */
  public String ceilingKey() {
    return ceilingKey;
  }

  /** The identity policy. */
  @Override public Policy policy() {
    return identity;
  }

  @Override public Ticker ticker() {
    return ticker;
  }

  /**
   * Both legs' decisions of one call ({@link AllOf.Result#legs()}): the identity's, and the ceiling's
   * (null when the identity refused). A leg whose pre-flight allowed but was not charged, because the
   * other refused, holds that peek (no ticket).
   */
  public record Charge(Decision identity, Decision ceiling) {
    public boolean allowed() {
      return identity.allowed() && ceiling != null && ceiling.allowed();
    }

    /** The identity's decision when both allow, else the refusing leg's. */
    public Decision decision() {
      return !identity.allowed() || ceiling.allowed() ? identity : ceiling;
    }
  }

  /** Charges {@code key} under {@code p} and the ceiling, or neither; see {@link Charge}. */
  public Charge charge(String key, long permits, Policy p) {
    return chargeAt(key, permits, p, ticker.nowMicros());
  }

  /**
   * {@link #charge} at {@code now} (threaded into the clocked limiters): the two legs are one
   * {@link AllOf} call, so a refusal of either leaves neither charged. When the identity was not
   * asked (a ceiling on no clock is charged first, and refused), the charge's identity is that refusal.
   */
  public Charge chargeAt(String key, long permits, Policy p, long now) {
    Checks.permits(permits, ceiling.limit(), ceiling.name());
    AllOf.Result r = AllOf.chargeAt(List.of(new AllOf.Charge(limiter, key, permits, p),
        new AllOf.Charge(ceilingLimiter, ceilingKey, permits, ceiling)), now);
    Decision id = r.legs().get(0);
    return reported(new Charge(id != null ? id : r.decision(), id != null && !id.allowed() ? null : r.legs().get(1)), key);
  }

  @Override public Decision tryAcquire(String key, long permits, Policy p) {
    return tryAcquireAt(key, permits, p, ticker.nowMicros());
  }

  /** The call's decision ({@link Charge#decision()}), reported to the listener as one decision. */
  @Override public Decision tryAcquireAt(String key, long permits, Policy p, long now) {
    return chargeAt(key, permits, p, now).decision();
  }

  @Override public Decision peek(String key, Policy p) {
    return peekAt(key, p, ticker.nowMicros());
  }

  @Override public Decision peekAt(String key, Policy p, long now) {
    Decision id = clocked != null ? clocked.peekAt(key, p, now) : limiter.peek(key, p);
    Decision global = ceilingClocked != null ? ceilingClocked.peekAt(ceilingKey, ceiling, now) : ceilingLimiter.peek(ceilingKey, ceiling);
    return !global.allowed() || global.remaining() < id.remaining() && id.allowed() ? global : id;
  }

  @Override public Refund refund(Ticket ticket) {
    return refundAt(ticket, ticker.nowMicros());
  }

  /** Refunds an identity ticket, or a ceiling ticket from {@link Charge#ceiling()}; one refund event. */
  @Override public Refund refundAt(Ticket ticket, long now) {
    Refund r = clocked != null ? clocked.refundAt(ticket, now) : limiter.refund(ticket);
    if (r == Refund.NO_EFFECT && ceilingLimiter != limiter) {
      r = ceilingClocked != null ? ceilingClocked.refundAt(ticket, now) : ceilingLimiter.refund(ticket);
    }
    if (ticket != null) {
      listener.onRefund(ticket.policy(), r);
    }
    return r;
  }

  /** One decision event per call, as on every limiter. */
  private Charge reported(Charge c, String key) {
    listener.onDecision(c.decision(), key);
    return c;
  }

  @Override public Settlement settle(Ticket ticket, long actualPermits) {
    return settleAt(ticket, actualPermits, ticker.nowMicros());
  }

  /**
   * Settles an identity ticket, or a ceiling ticket from {@link Charge#ceiling()}: each budget is
   * settled through its own ticket, as it is refunded.
   */
  @Override public Settlement settleAt(Ticket ticket, long actualPermits, long now) {
    Settlement r = clocked != null ? clocked.settleAt(ticket, actualPermits, now) : limiter.settle(ticket, actualPermits);
    if (r == Settlement.NO_EFFECT && ceilingLimiter != limiter) {
      r = ceilingClocked != null ? ceilingClocked.settleAt(ticket, actualPermits, now) : ceilingLimiter.settle(ticket, actualPermits);
    }
    if (ticket != null) {
      listener.onSettle(ticket.policy(), r);
    }
    return r;
  }

  @Override public void reset(String key, Policy p) {
    limiter.reset(key, p);
  }

  /** Fails fast on a bad value. */
  public static final class Builder {
    private final RateLimiter limiter;
    private final Policy ceiling;
    private Policy identity;
    private RateLimiter ceilingLimiter;
    private String ceilingKey = CEILING_KEY;
    /** Guarded as it is set: the limiter keeps it as is. */
    private RateLimitListener listener = RateLimitListener.NONE;

    private Builder(RateLimiter limiter, Policy ceiling) {
      this.limiter = limiter;
      this.ceiling = ceiling;
    }

    /** The identities' policy (default: the limiter's own). */
    public Builder identityPolicy(Policy identity) {
      this.identity = Checks.notNull("identity policy", identity);
      return this;
    }

    /** Keep the ceiling in another limiter (a shared store behind per-instance identities, say); default: the same one. */
    public Builder ceilingLimiter(RateLimiter ceilingLimiter) {
      this.ceilingLimiter = Checks.notNull("ceiling limiter", ceilingLimiter);
      return this;
    }

    /** The key the ceiling is charged to (default {@link #CEILING_KEY}). */
    public Builder ceilingKey(String key) {
      this.ceilingKey = Checks.key(key);
      return this;
    }

    /**
     * A listener told about every call's decision (one per call, whichever leg decided it), refund and
     * settlement; keys are passed only if {@code includeKeys}. Each leg's own limiter reports its own.
     */
    public Builder listener(RateLimitListener listener, boolean includeKeys) {
      this.listener = RateLimitListener.guarded(Checks.notNull("listener", listener), includeKeys);
      return this;
    }

    public CeilingRateLimiter build() {
      Policy id = identity != null ? identity : limiter.policy();
      if ((ceilingLimiter == null || ceilingLimiter == limiter) && ceiling.name().equals(id.name())) {
        throw new IllegalArgumentException("ceiling policy name '" + ceiling.name()
            + "' equals the identity policy's; give the ceiling its own name so the budgets stay apart");
      }
      return new CeilingRateLimiter(this);
    }
  }
}
