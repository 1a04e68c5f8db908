package dev.sluice;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/**
 * The answer to one check. Immutable.
 *
 * <p>Times are held as epoch microseconds and turned into {@link Instant} / {@link Duration} only
 * when asked for, so a caller that reads only {@link #allowed()} costs no allocation beyond what the
 * JIT can scalar-replace.
 *
 * <p>{@link #retryAfter()} is zero when allowed and, when refused, the exact wait until the same
 * request could fit if nothing else happened (never zero: at least 1 us). It is not rounded: a
 * near-cache or a waiting caller may rely on it to the microsecond, and every rendering rounds it
 * up (HTTP {@code Retry-After} to whole seconds, JSON milliseconds up), so none of them says 0.
 * {@link #resetAt()} is when the current window ends (fixed and sliding window), the bucket is full
 * again (token bucket), the debt is paid (GCRA) or the oldest entry expires (sliding log). For a
 * refusal {@code now + retryAfter <= resetAt} on the first three; a sliding-window request may only
 * fit once the previous window's weight has decayed in the next one, and a sliding-log request may
 * need more entries to expire than the oldest. The floor is applied here, in the one constructor
 * every backend goes through.
 */
public final class Decision {
  /** The shortest wait a refusal asks for: a refusal never says "retry now". */
  private static final long MIN_RETRY_MICROS = 1;

  private final boolean allowed;
  private final Reason reason;
  private final Path path;
  private final Policy policy;
  private final long limit;
  private final long remaining;
  private final long resetAtMicros;
  private final long retryAfterMicros;
  private final Ticket ticket;

  private Decision(boolean allowed, Reason reason, Path path, Policy policy, long limit, long remaining,
                   long resetAtMicros, long retryAfterMicros, Ticket ticket) {
    this.allowed = allowed;
    this.reason = reason;
    this.path = path;
    this.policy = policy;
    this.limit = limit;
    this.remaining = Math.max(0, remaining);
    this.resetAtMicros = resetAtMicros;
    this.retryAfterMicros = allowed ? 0 : Math.max(MIN_RETRY_MICROS, retryAfterMicros);
    this.ticket = ticket;
  }

  /** An allowed decision; {@code ticket} may be null when nothing was counted. */
  public static Decision allowed(Policy policy, long remaining, long resetAtMicros, Ticket ticket) {
    return new Decision(true, Reason.WITHIN_LIMIT, Path.PRIMARY, policy, policy.limit(), remaining, resetAtMicros, 0, ticket);
  }

  /** A refusal for {@code reason}; a {@code retryAfterMicros} below 1 us is raised to 1 us. */
  public static Decision refused(Policy policy, Reason reason, long remaining, long resetAtMicros, long retryAfterMicros) {
    return new Decision(false, reason, Path.PRIMARY, policy, policy.limit(), remaining, resetAtMicros, retryAfterMicros, null);
  }

  /**
   * A decision built field by field, for the failure modes, composition and near caches: anything
   * that is not a backend's own verdict (those use {@link #allowed} and {@link #refused}). Each field
   * is set by name, so no two numbers can be swapped unnoticed; unset fields are allowed within the
   * limit, on the primary path, nothing remaining, nothing to wait for, no ticket.
   * {@code resetAtMicros} has no default: {@link Builder#build()} refuses to guess it.
   */
  public static Builder builder(Policy policy) {
    return new Builder(Objects.requireNonNull(policy, "policy"));
  }

  /** See {@link #builder(Policy)}. Not thread-safe; build once. */
  public static final class Builder {
    private final Policy policy;
    private boolean allowed = true;
    private Reason reason = Reason.WITHIN_LIMIT;
    private Path path = Path.PRIMARY;
    private long remaining;
    private long resetAtMicros;
    private boolean resetSet;
    private long retryAfterMicros;
    private Ticket ticket;

    private Builder(Policy policy) {
      this.policy = policy;
    }

    /** Allowed, for {@code reason} ({@link Reason#WITHIN_LIMIT} unless a failure mode allowed it). */
    public Builder allowed(Reason reason) {
      this.allowed = true;
      this.reason = Objects.requireNonNull(reason, "reason");
      return this;
    }

    /** Refused, for {@code reason}. */
    public Builder refused(Reason reason) {
      this.allowed = false;
      this.reason = Objects.requireNonNull(reason, "reason");
      return this;
    }

    /** Who decided: {@link Path#PRIMARY} unless set. */
    public Builder path(Path path) {
      this.path = Objects.requireNonNull(path, "path");
      return this;
    }

    /** Permits left; a negative value is read as 0. */
    public Builder remaining(long remaining) {
      this.remaining = remaining;
      return this;
    }

    /** When the window ends or the state is restored, epoch microseconds. */
    public Builder resetAtMicros(long resetAtMicros) {
      this.resetAtMicros = resetAtMicros;
      this.resetSet = true;
      return this;
    }

    /** The wait a refusal asks for, microseconds: ignored when allowed, raised to 1 us when refused. */
    public Builder retryAfterMicros(long retryAfterMicros) {
      this.retryAfterMicros = retryAfterMicros;
      return this;
    }

    /** The ticket of what was counted; none unless set. */
    public Builder ticket(Ticket ticket) {
      this.ticket = ticket;
      return this;
    }

    /** @throws IllegalStateException when {@link #resetAtMicros} was not set */
    public Decision build() {
      if (!resetSet) {
        throw new IllegalStateException("resetAtMicros was not set for a decision of policy '" + policy.name()
            + "'; every decision says when its window ends or its state is restored");
      }
      return new Decision(allowed, reason, path, policy, policy.limit(), remaining, resetAtMicros, retryAfterMicros, ticket);
    }
  }

  /** This decision as served by another path (e.g. {@link Path#FALLBACK}). */
  public Decision withPath(Path newPath) {
    return newPath == path ? this
        : new Decision(allowed, reason, newPath, policy, limit, remaining, resetAtMicros, retryAfterMicros, ticket);
  }

  public boolean allowed() { return allowed; }

  public Reason reason() { return reason; }

  public Path path() { return path; }

  public Policy policy() { return policy; }

  /** The most permits the policy grants at once (fixed/sliding limit, bucket capacity, GCRA burst). */
  public long limit() { return limit; }

  /** Permits left after this decision, never negative. */
  public long remaining() { return remaining; }

  /** When the window ends or the state is restored: see the class comment for each algorithm. */
  public Instant resetAt() {
    return Instant.ofEpochSecond(Math.floorDiv(resetAtMicros, 1_000_000L), Math.floorMod(resetAtMicros, 1_000_000L) * 1_000L);
  }

  public long resetAtMicros() { return resetAtMicros; }

  /** Zero when allowed; when refused the exact wait until the request could fit, at least 1 us. */
  public Duration retryAfter() {
    return Duration.ofNanos(retryAfterMicros * 1_000L);
  }

  public long retryAfterMicros() { return retryAfterMicros; }

  /** Present when permits were counted and can be refunded. */
  public Optional<Ticket> ticket() {
    return Optional.ofNullable(ticket);
  }

  @Override public String toString() {
    return "Decision[" + (allowed ? "allowed" : "refused") + ", reason=" + reason + ", path=" + path
        + ", policy=" + policy.name() + ", limit=" + limit + ", remaining=" + remaining
        + ", resetAtMicros=" + resetAtMicros + ", retryAfterMicros=" + retryAfterMicros
        + (ticket != null ? ", ticket" : "") + "]";
  }

  /** Field-wise equality of the decision contract (allowed, reason, path, policy, limit, remaining, reset, retry); tickets are not compared. */
  @Override public boolean equals(Object o) {
    return o instanceof Decision d && allowed == d.allowed && reason == d.reason && path == d.path
        && policy.equals(d.policy) && limit == d.limit && remaining == d.remaining
        && resetAtMicros == d.resetAtMicros && retryAfterMicros == d.retryAfterMicros;
  }

  @Override public int hashCode() {
    return Long.hashCode(remaining) * 31 + Long.hashCode(resetAtMicros) + (allowed ? 1 : 0);
  }
}
