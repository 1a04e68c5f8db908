package dev.sluice.server;

import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.memory.MemoryRateLimiter;
import java.time.Duration;
import java.util.List;
import java.util.function.Function;

/**
 * Where the service keeps its counts: the embedded memory tier (the default: one process, zero I/O),
 * Redis, or PostgreSQL. A store hands out one limiter per configured policy.
 */
abstract class Store implements AutoCloseable {
  /**
   * The one issuer of every limiter of this store: the service hands out signed tickets instead of
   * ticket objects, and re-creates the ticket a verified signature names with this issuer, so that
   * it refunds into the limiter of its policy (deliberately, across requests).
   */
  final Ticket.Issuer issuer = new Ticket.Issuer();

  /** A short name for logs and {@code /healthz}: memory, redis or postgres. */
  abstract String name();

  /** Where the store is, for the startup banner; never includes a password. */
  abstract String describe();

  /** True for stores shared between instances (the health check then asks the store). */
  abstract boolean shared();

  /** The limiter that decides for {@code policy}, telling {@code listener} (never keys) about what it does. */
  abstract RateLimiter limiter(Policy policy, RateLimitListener listener);

  /**
   * Asks the store whether it answers within its timeout, without deciding anything (no limiter is
   * asked, nothing is counted): null when it did, else the reason in the API's words
   * ({@code store_unavailable}, {@code timeout}). The memory store always answers.
   */
  String probe() {
    return null;
  }

  /**
   * Where refunded tickets are remembered: in the process for the memory store (at most
   * {@code capacity} live ones); for a shared one, by the limiter's store step itself, so that a
   * ticket refunds once across every instance.
   */
  final SpentSet spentSet(int capacity) {
    return shared() ? SpentSet.IN_THE_STORE : new SpentTickets(capacity);
  }

  /** Fails fast when a policy's algorithm is not supported by this store. */
  void check(List<Policy> policies) {}

  @Override public void close() {}

  static Store memory(int maxKeys, Ticker ticker) {
    return new MemoryStore(maxKeys, MemoryRateLimiter.DEFAULT_MAX_KEY_LENGTH, ticker);
  }

  static Store memory(int maxKeys, int maxKeyLength, Ticker ticker) {
    return new MemoryStore(maxKeys, maxKeyLength, ticker);
  }

  /** One memory-tier limiter: per process, bounded to {@code maxKeys} tracked keys. */
  static RateLimiter memoryLimiter(Policy policy, Ticker ticker, int maxKeys) {
    return MemoryRateLimiter.builder(policy).ticker(ticker).maxKeys(maxKeys).build();
  }

  /**
   * {@code --redis URL}: every policy on Redis, one connection per policy from one client; each
   * policy's limiter decides its failures under {@code failureModes}' mode for it.
   */
  static Store redis(String url, Function<Policy, FailureMode> failureModes, Duration timeout) {
    return new RedisStore(url, failureModes, timeout);
  }

  /** {@code --postgres URL}: every policy in one PostgreSQL table, through one connection pool. */
  static Store postgres(String url, String table, Function<Policy, FailureMode> failureModes, Duration timeout, Duration sweepInterval) {
    return new PostgresStore(url, table, failureModes, timeout, sweepInterval);
  }

  /** {@code url} without a password ({@code user:secret@} and {@code password=} are masked). */
  static String redact(String url) {
    if (url == null) {
      return "null";
    }
    return url.replaceAll("(//[^/:@]*:)[^@/]*@", "$1***@").replaceAll("(?i)(password=)[^&;]*", "$1***");
  }

  static final class MemoryStore extends Store {
    private final int maxKeys;
    private final Ticker ticker;

    private final int maxKeyLength;

    MemoryStore(int maxKeys, int maxKeyLength, Ticker ticker) {
      check(maxKeys, maxKeyLength);
      this.maxKeys = maxKeys;
      this.maxKeyLength = maxKeyLength;
      this.ticker = ticker;
    }

    /** The rules of {@code --max-keys} and {@code --max-key-length}, checked whichever store runs (a flag is never accepted unread). */
    static void check(int maxKeys, int maxKeyLength) {
      if (maxKeys < 1) {
        throw new IllegalArgumentException("--max-keys " + maxKeys + " is not positive; it must be at least 1");
      }
      if (maxKeyLength < 1) {
        throw new IllegalArgumentException("--max-key-length " + maxKeyLength + " is not positive; it must be at least 1");
      }
      if (maxKeyLength > TicketCodec.MAX_MEMORY_KEY_LENGTH) {
        // A memory-store ticket carries the key itself (the tier is keyed by it); past this, a refund body would exceed 64 KiB.
        throw new IllegalArgumentException("--max-key-length " + maxKeyLength + " exceeds " + TicketCodec.MAX_MEMORY_KEY_LENGTH
            + ", the longest key whose refund ticket fits a request body; for longer keys use --redis or --postgres, which hash keys");
      }
    }

    @Override String name() { return "memory"; }

    @Override String describe() { return "the embedded memory store (per process, at most " + maxKeys + " keys per policy, keys of at most "
        + maxKeyLength + " characters)"; }

    @Override boolean shared() { return false; }

    @Override RateLimiter limiter(Policy policy, RateLimitListener listener) {
      return MemoryRateLimiter.builder(policy).ticker(ticker).maxKeys(maxKeys).maxKeyLength(maxKeyLength).issuer(issuer)
          .listener(listener, false).build();
    }
  }
}
