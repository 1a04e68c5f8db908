package dev.sluice.server;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Durations as people write them in a config file or on a command line: {@code 500ms}, {@code 1s}, {@code 5m}, {@code 1h}, {@code 1d}, or ISO-8601 {@code PT1M}. */
final class Durations {
  private static final Pattern SIMPLE = Pattern.compile("(\\d{1,15})\\s*(us|ms|s|m|h|d)");

  private Durations() {}

  static Duration parse(String what, String text) {
    if (text == null || text.isBlank()) {
      throw new IllegalArgumentException(what + " is missing; give a duration such as 500ms, 1s, 5m, 1h or PT1M");
    }
    String t = text.trim();
    Matcher m = SIMPLE.matcher(t);
    if (m.matches()) {
      long n = Long.parseLong(m.group(1));
      return switch (m.group(2)) {
        case "us" -> Duration.ofNanos(Math.multiplyExact(n, 1_000L));
        case "ms" -> Duration.ofMillis(n);
        case "s" -> Duration.ofSeconds(n);
        case "m" -> Duration.ofMinutes(n);
        case "h" -> Duration.ofHours(n);
        default -> Duration.ofDays(n);
      };
    }
    try {
      return Duration.parse(t);
    } catch (DateTimeParseException e) {
      throw new IllegalArgumentException(what + " '" + t + "' is not a duration; write a whole number and a unit"
          + " (us, ms, s, m, h, d) such as 500ms or 1m, or ISO-8601 such as PT1M30S");
    }
  }

  /** Shortest exact form: 1h, 90s, 250ms, 1500us. */
  static String format(long micros) {
    if (micros % 3_600_000_000L == 0) {
      return micros / 3_600_000_000L + "h";
    }
    if (micros % 60_000_000L == 0) {
      return micros / 60_000_000L + "m";
    }
    if (micros % 1_000_000L == 0) {
      return micros / 1_000_000L + "s";
    }
    if (micros % 1_000L == 0) {
      return micros / 1_000L + "ms";
    }
    return micros + "us";
  }
}
