package dev.sluice.spring;

import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.memory.MemoryRateLimiter;
import dev.sluice.spi.StoreRateLimiter;

/**
 * How the configured store builds one policy's limiter: {@code memory}, {@code redis} or
 * {@code jdbc}. A bean; an application may supply its own to build limiters its way.
 */
public interface StoreLimiters extends AutoCloseable {
  /** The store's name, as the Actuator endpoint and health report it. */
  String name();

  /** The limiter of {@code policy}, reporting to {@code listener}. */
  RateLimiter build(Policy policy, RateLimitListener listener);

  /** Releases what the store opened (a Redis client it created); limiters are closed by the registry. */
  @Override default void close() {}

  /** The in-process store: a {@link MemoryRateLimiter} per policy, at most {@code maxKeys} keys each. */
  static StoreLimiters memory(int maxKeys) {
    return new StoreLimiters() {
      @Override public String name() {
        return "memory";
      }

      @Override public RateLimiter build(Policy policy, RateLimitListener listener) {
        return MemoryRateLimiter.builder(policy).maxKeys(maxKeys).listener(listener, false).build();
      }
    };
  }

  /** A shared store's builder with {@code sluice.timeout}, {@code sluice.failure-mode} and the listener applied. */
  static <B extends StoreRateLimiter.Settings<B>> B configure(B builder, Policy policy, RateLimitListener listener,
      SluiceProperties props) {
    if (props.getTimeout() != null) {
      builder.timeout(props.getTimeout());
    }
    return builder.failureMode(props.failureModes().apply(policy)).listener(listener, false);
  }
}
