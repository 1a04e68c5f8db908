package dev.sluice.kernel;

import dev.sluice.internal.Checks;
import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.memory.MemoryRateLimiter;
import java.util.Locale;
import java.util.function.Function;

/**
 * The one parser of the words configuration names a {@link FailureMode} with: {@code closed},
 * {@code open}, {@code fallback}, in any case. {@code sluice serve}'s {@code --failure-mode} and the
 * Spring starter's {@code sluice.failure-mode} both read theirs here, so they accept the same words
 * and reject a wrong one with the same message.
 *
 * <p>It is also the one rule of what each word builds for a front end that keeps one limiter per
 * policy: {@code closed} is {@link FailureMode#closed()}; {@code open} is
 * {@link FailureMode#open(FailureMode.FailureAlert)} with the front end's alert; {@code fallback} is
 * {@link FailureMode#fallback(dev.sluice.RateLimiter)} over a {@link MemoryRateLimiter} of the same
 * policy, in this process, tracking at most {@code fallbackMaxKeys} keys (the front end's memory
 * bound), so that each instance limits on its own while the store is down.
 */
public final class FailureModeWords {
  private FailureModeWords() {}

  /**
   * The failure mode of each policy's limiter that {@code value} names; {@code setting} names where
   * it came from in the message of a word that is none of the three.
   */
  public static Function<Policy, FailureMode> parse(String setting, String value, FailureMode.FailureAlert openAlert,
      int fallbackMaxKeys) {
    String word = value == null ? "" : value.trim().toLowerCase(Locale.ROOT);
    switch (word) {
      case "closed":
        FailureMode closed = FailureMode.closed();
        return policy -> closed;
      case "open":
        FailureMode open = FailureMode.open(Checks.notNull("open alert", openAlert));
        return policy -> open;
      case "fallback":
        Checks.positive("fallback max keys", fallbackMaxKeys);
        return policy -> FailureMode.fallback(MemoryRateLimiter.builder(policy).maxKeys(fallbackMaxKeys).build());
      default:
        throw new IllegalArgumentException(setting + " " + (value == null ? "is not set" : "'" + value + "' is unknown")
            + "; use closed, open or fallback");
    }
  }
}
