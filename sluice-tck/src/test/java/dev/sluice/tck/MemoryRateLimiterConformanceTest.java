package dev.sluice.tck;

import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.memory.MemoryRateLimiter;
import java.util.Optional;
import java.util.OptionalInt;

/** The memory tier runs the whole kit. */
class MemoryRateLimiterConformanceTest extends RateLimiterContract {
  @Override protected RateLimiter newLimiter(Policy policy, Ticker ticker) {
    return MemoryRateLimiter.builder(policy).ticker(ticker).build();
  }

  @Override protected Optional<RateLimiter> newLimiterWithIssuer(Policy policy, Ticker ticker, Ticket.Issuer issuer) {
    return Optional.of(MemoryRateLimiter.builder(policy).ticker(ticker).issuer(issuer).build());
  }

  @Override protected Optional<RateLimiter> newLimiterWithListener(Policy policy, Ticker ticker, RateLimitListener listener) {
    return Optional.of(MemoryRateLimiter.builder(policy).ticker(ticker).listener(listener, true).build());
  }

  @Override protected OptionalInt maxKeyLength() {
    return OptionalInt.of(MemoryRateLimiter.DEFAULT_MAX_KEY_LENGTH);
  }
}
