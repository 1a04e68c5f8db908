package dev.sluice.compose;

import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticket;
import dev.sluice.internal.Checks;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.ToLongFunction;

/**
 * A declarative limiter over a typed input: the key, the limit and the window are functions of the
 * input (a realm's configured maximum, a user id), in the style of alepha's {@code $rateLimit}.
 *
 * <pre>{@code
 * record Attempt(String realm, String userId, long max, Duration window) {}
 *
 * TypedRateLimiter<Attempt> account = RateLimiters.<Attempt>typed("login.account", memory)
 *     .key(a -> a.realm() + ":" + a.userId())
 *     .limit(Attempt::max)
 *     .window(Attempt::window)
 *     .build();
 * Decision d = account.tryAcquire(attempt);
 * }</pre>
 *
 * <p>Each call derives a {@link Policy} named {@code name} with the input's limit and window and
 * asks the backing limiter with it as a per-call override. The functions must be synchronous and
 * cheap: load realm settings before the call and pass them in the input.
 *
 * <p><b>Validated like everything else.</b> A misconfiguration is a bug, not an outage, so it throws
 * {@link IllegalArgumentException} with the {@link Checks} message instead of deciding: a null input,
 * a non-{@link String} input without a key function, a null or blank derived key, a limit below 1, a
 * window under 1 ms, permits above the derived limit.
 *
 * <p><b>Identity.</b> The memory tier keeps one budget per (policy, key), and a policy is its name
 * <i>and</i> its numbers; so a key whose configured limit changes starts a fresh budget there. Keep
 * limits stable per key, or use a store that identifies budgets by name only.
 */
public final class TypedRateLimiter<T> {
  /** How a derived limit and window become an algorithm. */
  public enum Shape {
    /** {@code limit} per fixed window opened by a key's first hit (alepha's default). */
    FIXED_WINDOW,
    /** {@code limit} per sliding window (two-window weighted counter). */
    SLIDING_WINDOW,
    /** A bucket of {@code limit} tokens refilled by {@code limit} per window. */
    TOKEN_BUCKET
  }

  /** Derived policies are cached up to this many distinct (limit, window) pairs; beyond it they are built per call. */
  static final int POLICY_CACHE_MAX = 256;

  private final String name;
  private final RateLimiter backing;
  private final Function<? super T, String> keyFn;
  private final ToLongFunction<? super T> limitFn;
  private final Function<? super T, Duration> windowFn;
  private final Shape shape;
  private final ConcurrentHashMap<Shaped, Policy> policies = new ConcurrentHashMap<>();

  private record Shaped(long limit, Duration window) {}

  private TypedRateLimiter(Builder<T> b) {
    this.name = b.name;
    this.backing = b.backing;
    this.keyFn = b.keyFn;
    this.limitFn = b.limitFn;
    this.windowFn = b.windowFn;
    this.shape = b.shape;
  }

  public static <T> Builder<T> builder(String name, RateLimiter backing) {
    return new Builder<>(Checks.policyName(name), Checks.notNull("backing limiter", backing));
  }

  public String name() {
    return name;
  }

  /** Counts one hit for {@code input}. */
  public Decision tryAcquire(T input) {
    return tryAcquire(input, 1);
  }

  public Decision tryAcquire(T input, long permits) {
    Policy p = policyFor(input);
    return backing.tryAcquire(keyOf(input), checkPermits(permits, p), p);
  }

  public CompletionStage<Decision> tryAcquireAsync(T input, long permits) {
    Policy p = policyFor(input);
    return backing.tryAcquireAsync(keyOf(input), checkPermits(permits, p), p);
  }

  /** Non-mutating: what one hit would decide now. */
  public Decision peek(T input) {
    Policy p = policyFor(input);
    return backing.peek(keyOf(input), p);
  }

  /** Gives a hit back in the window it was counted in (e.g. the login succeeded). Never throws. */
  public Refund refund(Ticket ticket) {
    try {
      return backing.refund(ticket);
    } catch (RuntimeException e) {
      return Refund.FAILED;
    }
  }

  /**
   * Settles a hit at its actual cost ({@link RateLimiter#settle}). A bad {@code actualPermits}
   * throws as there; store trouble is {@link Settlement#FAILED}.
   */
  public Settlement settle(Ticket ticket, long actualPermits) {
    if (ticket != null) {
      Checks.actual(actualPermits, ticket.policy().limit(), ticket.policy().name());
    }
    try {
      return backing.settle(ticket, actualPermits);
    } catch (RuntimeException e) {
      return Settlement.FAILED;
    }
  }

  public void reset(T input) {
    backing.reset(keyOf(input), policyFor(input));
  }

  /** The key {@code input} is counted under. */
  public String keyOf(T input) {
    Checks.notNull("input", input);
    if (keyFn == null) {
      if (input instanceof String s) {
        return Checks.key(s);
      }
      throw new IllegalArgumentException("input of type " + input.getClass().getName() + " has no key function; "
          + "give key(input -> ...) to the builder, or pass String inputs");
    }
    return Checks.key(keyFn.apply(input));
  }

  /** The policy {@code input} is decided under: this limiter's name with the input's limit and window. */
  public Policy policyFor(T input) {
    Checks.notNull("input", input);
    long limit = limitFn.applyAsLong(input);
    Duration window = windowFn.apply(input);
    Checks.positive("limit", limit);
    Checks.window("window", window);
    Shaped s = new Shaped(limit, window);
    Policy p = policies.get(s);
    if (p == null) {
      p = switch (shape) {
        case FIXED_WINDOW -> Policy.fixedWindow(name, limit, window);
        case SLIDING_WINDOW -> Policy.slidingWindow(name, limit, window);
        case TOKEN_BUCKET -> Policy.tokenBucket(name, limit, limit, window);
      };
      if (policies.size() < POLICY_CACHE_MAX) {
        policies.putIfAbsent(s, p);
      }
    }
    return p;
  }

  private static long checkPermits(long permits, Policy p) {
    return Checks.permits(permits, p.limit(), p.name());
  }

  public static final class Builder<T> {
    private final String name;
    private final RateLimiter backing;
    private Function<? super T, String> keyFn;
    private ToLongFunction<? super T> limitFn;
    private Function<? super T, Duration> windowFn;
    private Shape shape = Shape.FIXED_WINDOW;

    private Builder(String name, RateLimiter backing) {
      this.name = name;
      this.backing = backing;
    }

    /** The key of an input. Without it, inputs must be strings (the string is the key). */
    public Builder<T> key(Function<? super T, String> keyFn) {
      this.keyFn = Checks.notNull("key function", keyFn);
      return this;
    }

    /** The limit of an input, e.g. its realm's configured maximum. */
    public Builder<T> limit(ToLongFunction<? super T> limitFn) {
      this.limitFn = Checks.notNull("limit function", limitFn);
      return this;
    }

    /** A fixed limit. */
    public Builder<T> limit(long limit) {
      Checks.positive("limit", limit);
      this.limitFn = x -> limit;
      return this;
    }

    /** The window of an input. */
    public Builder<T> window(Function<? super T, Duration> windowFn) {
      this.windowFn = Checks.notNull("window function", windowFn);
      return this;
    }

    /** A fixed window. */
    public Builder<T> window(Duration window) {
      Checks.window("window", window);
      this.windowFn = x -> window;
      return this;
    }

    /** How limit and window become an algorithm (default {@link Shape#FIXED_WINDOW}). */
    public Builder<T> shape(Shape shape) {
      this.shape = Objects.requireNonNull(shape, "shape");
      return this;
    }

    public TypedRateLimiter<T> build() {
      if (limitFn == null) {
        throw new IllegalStateException("typed limiter '" + name + "' has no limit: call limit(n) or limit(input -> ...)");
      }
      if (windowFn == null) {
        throw new IllegalStateException("typed limiter '" + name + "' has no window: call window(duration) or window(input -> ...)");
      }
      return new TypedRateLimiter<>(this);
    }
  }
}
