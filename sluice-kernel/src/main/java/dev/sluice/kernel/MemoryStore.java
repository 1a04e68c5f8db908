package dev.sluice.kernel;

import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.memory.MemoryRateLimiter;

/** The embedded memory store: a {@link MemoryRateLimiter} per policy, in this process, zero I/O. */
final class MemoryStore extends Store {
  private final int maxKeys;
  private final int maxKeyLength;
  private final Ticker ticker;

  MemoryStore(int maxKeys, int maxKeyLength, Ticker ticker) {
    if (maxKeys < 1) {
      throw new IllegalArgumentException("maxKeys " + maxKeys + " is not positive; it must be at least 1");
    }
    if (maxKeyLength < 1) {
      throw new IllegalArgumentException("maxKeyLength " + maxKeyLength + " is not positive; it must be at least 1");
    }
    this.maxKeys = maxKeys;
    this.maxKeyLength = maxKeyLength;
    this.ticker = ticker == null ? Ticker.system() : ticker;
  }

  @Override public String name() { return "memory"; }

  @Override public String describe() {
    return "the embedded memory store (per process, at most " + maxKeys + " keys per policy, keys of at most "
        + maxKeyLength + " characters)";
  }

  @Override public boolean shared() { return false; }

  @Override public RateLimiter limiter(Policy policy, RateLimitListener listener) {
    return MemoryRateLimiter.builder(policy).ticker(ticker).maxKeys(maxKeys).maxKeyLength(maxKeyLength).issuer(issuer())
        .listener(listener, false).build();
  }
}
