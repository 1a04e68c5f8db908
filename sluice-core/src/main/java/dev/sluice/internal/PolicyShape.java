package dev.sluice.internal;

import dev.sluice.Algorithm;
import dev.sluice.Policy;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The one definition of how policies are written in configuration: a list of named entries, each
 * an algorithm and that algorithm's parameters. {@code sluice serve}'s policy file (YAML through
 * Jackson) and the Spring Boot starter's {@code sluice.policies} (Spring's binder) both hand their
 * entries here as plain maps, so the two accept the same entries and reject the same mistakes with
 * the same messages.
 *
 * <pre>{@code
 * - name: login
 *   algorithm: fixed-window      # limit per window; a window opens on a key's first hit
 *   limit: 5
 *   window: 1m
 * - name: api
 *   algorithm: token-bucket      # capacity, refilled refill-tokens every refill-period
 *   capacity: 100
 *   refill-tokens: 10
 *   refill-period: 1s
 * }</pre>
 * Algorithms and their parameters: {@code fixed-window}, {@code sliding-window}, {@code sliding-log}
 * (limit, window); {@code token-bucket} (capacity, refill-tokens, refill-period); {@code gcra} (rate,
 * period, burst). Durations: {@code 500ms}, {@code 1s}, {@code 5m}, {@code 1h}, {@code 1d} or
 * ISO-8601. Every mistake is reported with the entry it is in; nothing is guessed or defaulted
 * silently.
 */
public final class PolicyShape {
  private static final Map<String, List<String>> PARAMETERS = Map.of(
      "fixed-window", List.of("limit", "window"),
      "sliding-window", List.of("limit", "window"),
      "sliding-log", List.of("limit", "window"),
      "token-bucket", List.of("capacity", "refill-tokens", "refill-period"),
      "gcra", List.of("rate", "period", "burst"));
  private static final List<String> ALGORITHMS =
      List.of("fixed-window", "sliding-window", "token-bucket", "gcra", "sliding-log");
  private static final Pattern SIMPLE = Pattern.compile("(\\d{1,15})\\s*(us|ms|s|m|h|d)");

  private PolicyShape() {}

  /**
   * The policies of {@code list} (a non-empty list of entries, each a map from field name to a
   * string or a number), in order; {@code source} names where they came from in every message.
   */
  public static List<Policy> policies(Object list, String source) {
    if (!(list instanceof List<?> entries) || entries.isEmpty()) {
      throw new IllegalArgumentException(source + ": 'policies' must be a non-empty list");
    }
    Map<String, Policy> byName = new LinkedHashMap<>();
    for (int i = 0; i < entries.size(); i++) {
      Policy p = policy(entries.get(i), source + ": policy #" + (i + 1));
      if (byName.putIfAbsent(p.name(), p) != null) {
        throw new IllegalArgumentException(source + ": policy #" + (i + 1) + " repeats the name '" + p.name()
            + "'; every policy needs its own name (the name is part of every key's identity)");
      }
    }
    return List.copyOf(byName.values());
  }

  /** One entry (a map of name, algorithm and its parameters); {@code where} starts every message. */
  public static Policy policy(Object entry, String where) {
    if (!(entry instanceof Map<?, ?> e)) {
      throw new IllegalArgumentException(where + " is not a mapping; give name, algorithm and its parameters");
    }
    String name = text(e, "name", where);
    where = where + " ('" + name + "')";
    String algorithm = text(e, "algorithm", where);
    List<String> params = PARAMETERS.get(algorithm);
    if (params == null) {
      throw new IllegalArgumentException(where + ": unknown algorithm '" + algorithm + "'; use one of "
          + String.join(", ", ALGORITHMS));
    }
    for (Object key : e.keySet()) {
      String f = String.valueOf(key);
      if (!f.equals("name") && !f.equals("algorithm") && !params.contains(f)) {
        throw new IllegalArgumentException(where + ": unknown parameter '" + f + "'; " + algorithm + " takes "
            + String.join(", ", params));
      }
    }
    try {
      return switch (algorithm) {
        case "fixed-window" -> Policy.fixedWindow(name, number(e, "limit", where), duration(e, "window", where));
        case "sliding-window" -> Policy.slidingWindow(name, number(e, "limit", where), duration(e, "window", where));
        case "sliding-log" -> Policy.slidingLog(name, number(e, "limit", where), duration(e, "window", where));
        case "token-bucket" -> Policy.tokenBucket(name, number(e, "capacity", where), number(e, "refill-tokens", where),
            duration(e, "refill-period", where));
        default -> Policy.gcra(name, number(e, "rate", where), duration(e, "period", where), number(e, "burst", where));
      };
    } catch (IllegalArgumentException ex) {
      if (ex.getMessage().startsWith(where)) {
        throw ex;
      }
      throw new IllegalArgumentException(where + ": " + ex.getMessage(), ex);
    }
  }

  /** The policy's entry as it is written in configuration (for listings: the service, the Actuator). */
  public static Map<String, Object> describe(Policy p) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("name", p.name());
    m.put("algorithm", p.algorithm().id());
    Algorithm a = p.algorithm();
    if (a instanceof Algorithm.FixedWindow fw) {
      m.put("limit", fw.limit());
      m.put("window", format(fw.windowMicros()));
    } else if (a instanceof Algorithm.SlidingWindow sw) {
      m.put("limit", sw.limit());
      m.put("window", format(sw.windowMicros()));
    } else if (a instanceof Algorithm.SlidingLog sl) {
      m.put("limit", sl.limit());
      m.put("window", format(sl.windowMicros()));
    } else if (a instanceof Algorithm.TokenBucket tb) {
      m.put("capacity", tb.capacity());
      m.put("refill-tokens", tb.refillTokens());
      m.put("refill-period", format(tb.refillPeriodMicros()));
    } else if (a instanceof Algorithm.Gcra g) {
      m.put("rate", g.rate());
      m.put("period", format(g.periodMicros()));
      m.put("burst", g.burst());
    }
    return m;
  }

  /**
   * The span of time a policy's quota covers, in microseconds: the window, or for the buckets the
   * time to refill from empty. It is the {@code w} of the {@code RateLimit-Policy} header and the life
   * of a refund ticket (after it, the permits a ticket names have come back anyway).
   */
  public static long quotaMicros(Algorithm a) {
    if (a instanceof Algorithm.FixedWindow fw) {
      return fw.windowMicros();
    } else if (a instanceof Algorithm.SlidingWindow sw) {
      return sw.windowMicros();
    } else if (a instanceof Algorithm.SlidingLog sl) {
      return sl.windowMicros();
    } else if (a instanceof Algorithm.TokenBucket tb) {
      return ceilDiv(tb.capacity() * tb.refillPeriodMicros(), tb.refillTokens());
    } else {
      Algorithm.Gcra g = (Algorithm.Gcra) a;
      return ceilDiv(g.burst() * g.periodMicros(), g.rate());
    }
  }

  /**
   * A duration as people write it in a config file or on a command line: {@code 500ms}, {@code 1s},
   * {@code 5m}, {@code 1h}, {@code 1d}, or ISO-8601 {@code PT1M}; {@code what} names it in the message.
   */
  public static Duration duration(String what, String text) {
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

  /** A duration in its shortest exact form: 1h, 90s, 250ms, 1500us. */
  public static String format(long micros) {
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

  private static String text(Map<?, ?> e, String field, String where) {
    Object v = e.get(field);
    if (v == null) {
      throw new IllegalArgumentException(where + ": '" + field + "' is missing");
    }
    if (!(v instanceof CharSequence) && !(v instanceof Number)) {
      throw new IllegalArgumentException(where + ": '" + field + "' must be a string");
    }
    return v.toString();
  }

  private static long number(Map<?, ?> e, String field, String where) {
    Object v = e.get(field);
    if (v == null) {
      throw new IllegalArgumentException(where + ": '" + field + "' is missing");
    }
    if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) {
      return ((Number) v).longValue();
    }
    if (v instanceof java.math.BigInteger b && b.bitLength() < 64) {
      return b.longValue();
    }
    throw new IllegalArgumentException(where + ": '" + field + "' is " + shown(v) + "; it must be a whole number");
  }

  private static Duration duration(Map<?, ?> e, String field, String where) {
    Object v = e.get(field);
    if (v == null) {
      throw new IllegalArgumentException(where + ": '" + field + "' is missing");
    }
    if (v instanceof Number) {
      throw new IllegalArgumentException(where + ": '" + field + "' is " + v + " without a unit; write e.g. " + v + "s or " + v + "ms");
    }
    return duration(where + ": '" + field + "'", v.toString());
  }

  private static String shown(Object v) {
    return v instanceof CharSequence s ? Checks.quote(s.toString()) : String.valueOf(v);
  }

  private static long ceilDiv(long a, long b) {
    return -Math.floorDiv(-a, b);
  }
}
