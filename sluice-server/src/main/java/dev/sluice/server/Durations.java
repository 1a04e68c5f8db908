package dev.sluice.server;

import dev.sluice.kernel.PolicyWords;
import java.time.Duration;

/** Durations as people write them in a config file or on a command line; the rule is {@link PolicyWords#duration}'s. */
final class Durations {
  private Durations() {}

  static Duration parse(String what, String text) {
    return PolicyWords.duration(what, text);
  }

  /** Shortest exact form: 1h, 90s, 250ms, 1500us. */
  static String format(long micros) {
    return PolicyWords.format(micros);
  }
}
