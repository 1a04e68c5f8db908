package dev.sluice.kernel;

import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import java.time.Duration;
import java.util.List;
import java.util.function.Function;

/**
 * Where an application keeps its counts: the embedded memory tier, Redis or PostgreSQL (or a store a
 * {@link StoreFactory} adds). A store hands out one limiter per policy, all with its one
 * {@link #issuer()}, and closes what it opened.
 *
 * <p>Front ends build a store through {@link StoreFactory#named(String)} or the factories here, and
 * never build a limiter of a store themselves: what a store's limiters share (client, pool, issuer,
 * timeout, failure mode) is decided once.
 */
public abstract class Store implements AutoCloseable {
  private final Ticket.Issuer issuer = new Ticket.Issuer();

  /** For subclasses. */
  protected Store() {}

  /**
   * The one issuer of every limiter of this store: a ticket refunds into the limiter of its budget,
   * and a front end that hands out tickets by value (the service's signed tickets) restores them with it.
   */
  public final Ticket.Issuer issuer() {
    return issuer;
  }

  /** A short name for logs and health: {@code memory}, {@code redis}, {@code postgres} (a factory's name). */
  public abstract String name();

  /** Where the store is, for a startup banner; never includes a password. */
  public abstract String describe();

  /** True for stores shared between instances (readiness then asks the store). */
  public abstract boolean shared();

  /** The limiter that decides for {@code policy}, telling {@code listener} (never keys) what it does. */
  public abstract RateLimiter limiter(Policy policy, RateLimitListener listener);

  /**
   * Asks the store whether it answers within its timeout without deciding anything (no limiter is
   * asked, nothing is counted): null when it did, else the reason in the API's words
   * ({@code store_unavailable}, {@code timeout}). The memory store always answers.
   */
  public String probe() {
    return null;
  }

  /**
   * A probe's answer for one store call, the rule every shared store's {@link #probe} follows: null
   * when {@code call} returned; {@code timeout} when it threw {@link java.util.concurrent.TimeoutException}
   * (its wait ran out); {@code store_unavailable} for anything else it threw (a refused connection, an
   * error reply, an interrupt, which is kept).
   */
  protected static String probeAnswer(java.util.concurrent.Callable<?> call) {
    try {
      call.call();
      return null;
    } catch (java.util.concurrent.TimeoutException e) {
      return DecisionWords.of(dev.sluice.Reason.TIMEOUT);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return DecisionWords.of(dev.sluice.Reason.STORE_UNAVAILABLE);
    } catch (Exception e) {
      return DecisionWords.of(dev.sluice.Reason.STORE_UNAVAILABLE);
    }
  }

  /** Fails fast, before any limiter is built, when a policy's algorithm is not supported by this store. */
  public void check(List<Policy> policies) {}

  /** Closes the limiters this store built and what it opened (clients, pools). */
  @Override public void close() {}

  /** The embedded memory store: per process, at most {@code maxKeys} keys per policy, keys of the default length. */
  public static Store memory(int maxKeys, Ticker ticker) {
    return new MemoryStore(maxKeys, dev.sluice.memory.MemoryRateLimiter.DEFAULT_MAX_KEY_LENGTH, ticker);
  }

  /** The embedded memory store with keys of at most {@code maxKeyLength} UTF-16 code units. */
  public static Store memory(int maxKeys, int maxKeyLength, Ticker ticker) {
    return new MemoryStore(maxKeys, maxKeyLength, ticker);
  }

  /**
   * Every policy on Redis at {@code url}, on a client this store creates and shuts down; each policy's
   * limiter decides its failures under {@code failureModes}' mode for it. Needs {@code sluice-redis}.
   */
  public static Store redis(String url, Function<Policy, FailureMode> failureModes, Duration timeout) {
    return RedisStore.fromUrl(url, failureModes, timeout);
  }

  /**
   * Every policy in one PostgreSQL table over a pool this store creates (HikariCP), the table created
   * if absent and swept every {@code sweepInterval}. Needs {@code sluice-jdbc} and HikariCP.
   */
  public static Store postgres(String url, String table, Function<Policy, FailureMode> failureModes, Duration timeout,
      Duration sweepInterval) {
    return PostgresStore.fromUrl(url, table, failureModes, timeout, sweepInterval);
  }

  /** {@code url} without a password ({@code user:secret@} and {@code password=} are masked). */
  public static String redact(String url) {
    if (url == null) {
      return "null";
    }
    return url.replaceAll("(//[^/:@]*:)[^@/]*@", "$1***@").replaceAll("(?i)(password=)[^&;]*", "$1***");
  }

  /** Closes {@code limiter} if it holds anything, logging (never throwing) a failure. */
  static void close(RateLimiter limiter) {
    if (limiter instanceof AutoCloseable c) {
      try {
        c.close();
      } catch (Exception e) {
        System.getLogger(Store.class.getName()).log(System.Logger.Level.WARNING,
            "closing the limiter of policy '" + limiter.policy().name() + "' failed", e);
      }
    }
  }
}
