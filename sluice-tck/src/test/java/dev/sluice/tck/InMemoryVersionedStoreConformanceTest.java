package dev.sluice.tck;

import dev.sluice.Algorithm;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.store.InMemoryVersionedStore;
import dev.sluice.store.VersionedStoreRateLimiter;

/** The compare-and-set engine over the in-memory reference store runs the whole kit (the sliding log is memory-only). */
class InMemoryVersionedStoreConformanceTest extends RateLimiterContract {
  private final InMemoryVersionedStore store = new InMemoryVersionedStore();

  @Override protected RateLimiter newLimiter(Policy policy, Ticker ticker) {
    return VersionedStoreRateLimiter.builder(policy, store).ticker(ticker).build();
  }

  @Override protected boolean supports(Algorithm algorithm) {
    return !(algorithm instanceof Algorithm.SlidingLog);
  }
}
