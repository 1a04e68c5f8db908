package dev.sluice.kernel;

import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.Ticker;
import dev.sluice.memory.MemoryRateLimiter;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Function;

/**
 * What a front end tells a {@link StoreFactory} about the store it wants; each factory reads the
 * fields it needs. Immutable; variants with the {@code with} methods.
 *
 * @param url where a shared store is ({@code redis://...}, {@code jdbc:postgresql://...}); null for memory
 * @param failureModes each policy's failure mode on a shared store
 * @param timeout a shared store's deadline per call; null keeps the limiter's default
 * @param maxKeys the memory store's keys per policy
 * @param maxKeyLength the memory store's longest key, in UTF-16 code units
 * @param ticker the memory store's clock
 * @param table a SQL store's table
 * @param sweepInterval how often a SQL store of its own deletes expired rows
 */
public record StoreOptions(String url, Function<Policy, FailureMode> failureModes, Duration timeout, int maxKeys,
    int maxKeyLength, Ticker ticker, String table, Duration sweepInterval) {
  /** The table a SQL store uses unless told otherwise. */
  public static final String DEFAULT_TABLE = "sluice_rate_limits";

  public StoreOptions {
    Objects.requireNonNull(failureModes, "failureModes");
    Objects.requireNonNull(ticker, "ticker");
    Objects.requireNonNull(table, "table");
    Objects.requireNonNull(sweepInterval, "sweepInterval");
  }

  /** No URL, failures closed, the limiters' default timeout, 10,000 keys of at most 512 characters, the system clock. */
  public static StoreOptions defaults() {
    FailureMode closed = FailureMode.closed();
    return new StoreOptions(null, p -> closed, null, MemoryRateLimiter.DEFAULT_MAX_KEYS,
        MemoryRateLimiter.DEFAULT_MAX_KEY_LENGTH, Ticker.system(), DEFAULT_TABLE, Duration.ofMinutes(1));
  }

  public StoreOptions withUrl(String url) {
    return new StoreOptions(url, failureModes, timeout, maxKeys, maxKeyLength, ticker, table, sweepInterval);
  }

  public StoreOptions withFailureModes(Function<Policy, FailureMode> failureModes) {
    return new StoreOptions(url, failureModes, timeout, maxKeys, maxKeyLength, ticker, table, sweepInterval);
  }

  public StoreOptions withTimeout(Duration timeout) {
    return new StoreOptions(url, failureModes, timeout, maxKeys, maxKeyLength, ticker, table, sweepInterval);
  }

  public StoreOptions withMemory(int maxKeys, int maxKeyLength, Ticker ticker) {
    return new StoreOptions(url, failureModes, timeout, maxKeys, maxKeyLength, ticker, table, sweepInterval);
  }

  public StoreOptions withTable(String table, Duration sweepInterval) {
    return new StoreOptions(url, failureModes, timeout, maxKeys, maxKeyLength, ticker, table, sweepInterval);
  }
}
