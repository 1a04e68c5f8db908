package dev.sluice.kernel;

import dev.sluice.Path;
import dev.sluice.Reason;
import java.util.Locale;

/**
 * How a decision's reason and path are spelled wherever a front end writes them (JSON bodies, problem
 * details, health details, logs): the enum name in lower case, {@code limit_exceeded},
 * {@code store_unavailable}, {@code failure_mode}.
 */
public final class DecisionWords {
  private DecisionWords() {}

  /** {@code limit_exceeded}, {@code store_unavailable}, ... */
  public static String of(Reason reason) {
    return reason.name().toLowerCase(Locale.ROOT);
  }

  /** {@code primary}, {@code failure_mode}, {@code fallback}. */
  public static String of(Path path) {
    return path.name().toLowerCase(Locale.ROOT);
  }
}
