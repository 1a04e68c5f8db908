package dev.sluice.kernel;

import dev.sluice.internal.AlgorithmKind;
import dev.sluice.internal.Checks;
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
 * Algorithms and their parameters (the core's list of algorithms): {@code fixed-window}, {@code sliding-window},
 * {@code sliding-log} (limit, window); {@code token-bucket} (capacity, refill-tokens, refill-period);
 * {@code gcra} (rate, period, burst). Durations: {@code 500ms}, {@code 1s}, {@code 5m}, {@code 1h}, {@code 1d} or
 * ISO-8601. Every mistake is reported with the entry it is in; nothing is guessed or defaulted
 * silently.
 */
public final class PolicyWords {
  private static final Pattern SIMPLE = Pattern.compile("(\\d{1,15})\\s*(us|ms|s|m|h|d)");

  private PolicyWords() {}

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
      Policy p = policy(based(entries, i, source), source + ": policy #" + (i + 1));
      if (byName.putIfAbsent(p.name(), p) != null) {
        throw new IllegalArgumentException(source + ": policy #" + (i + 1) + " repeats the name '" + p.name()
            + "'; every policy needs its own name (the name is part of every key's identity)");
      }
    }
    return List.copyOf(byName.values());
  }

  /**
   * Entry {@code i} with its {@code base} resolved: a shared base configuration (Resilience4j's
   * {@code baseConfig}), the fields of the entry named by {@code base} (itself resolved, so bases
   * chain) under the entry's own, which win; {@code base} itself removed. A base that names no entry,
   * or a chain that comes back to itself, is refused naming the entry and the value.
   */
  private static Object based(List<?> entries, int i, String source) {
    Object entry = entries.get(i);
    if (!(entry instanceof Map<?, ?> e) || !e.containsKey("base")) {
      return entry;
    }
    Map<Object, Object> merged = new LinkedHashMap<>();
    java.util.Set<String> seen = new java.util.LinkedHashSet<>();
    Map<?, ?> at = e;
    String where = source + ": policy #" + (i + 1) + " ('" + e.get("name") + "')";
    java.util.ArrayDeque<Map<?, ?>> chain = new java.util.ArrayDeque<>();
    while (at != null) {
      chain.push(at);
      Object base = at.get("base");
      if (base == null) {
        break;
      }
      String b = base.toString();
      if (!seen.add(b)) {
        throw new IllegalArgumentException(where + ": base '" + b + "' comes back to itself (" + String.join(" -> ", seen)
            + " -> " + b + "); a base chain must end at an entry without a base");
      }
      at = null;
      for (Object other : entries) {
        if (other instanceof Map<?, ?> o && b.equals(String.valueOf(o.get("name")))) {
          at = o;
          break;
        }
      }
      if (at == null) {
        throw new IllegalArgumentException(where + ": base '" + b + "' names no policy; give the name of another entry");
      }
    }
    for (Map<?, ?> m : chain) { // the farthest base first, the entry itself last
      merged.putAll(m);
    }
    merged.put("name", e.get("name"));
    merged.remove("base");
    if (!e.containsKey("algorithm")) {
      return merged;
    }
    // The entry names its own algorithm: a base's parameters of another algorithm are not inherited.
    AlgorithmKind kind = AlgorithmKind.find(String.valueOf(e.get("algorithm")), 0, String.valueOf(e.get("algorithm")).length());
    if (kind != null) {
      merged.keySet().removeIf(k -> !e.containsKey(k) && !k.equals("name") && !k.equals("algorithm")
          && kind.parameters().stream().noneMatch(p -> p.name().equals(String.valueOf(k))));
    }
    return merged;
  }

  /** One entry (a map of name, algorithm and its parameters); {@code where} starts every message. */
  public static Policy policy(Object entry, String where) {
    if (!(entry instanceof Map<?, ?> e)) {
      throw new IllegalArgumentException(where + " is not a mapping; give name, algorithm and its parameters");
    }
    String name = text(e, "name", where);
    String at = where + " ('" + name + "')";
    String algorithm = text(e, "algorithm", at);
    try {
      AlgorithmKind kind = AlgorithmKind.parse(algorithm);
      for (Object key : e.keySet()) {
        String f = String.valueOf(key);
        if (!f.equals("name") && !f.equals("algorithm") && kind.parameters().stream().noneMatch(p -> p.name().equals(f))) {
          throw new IllegalArgumentException(at + ": unknown parameter '" + f + "'; " + algorithm + " takes "
              + kind.parameterNames());
        }
      }
      return new Policy(name, kind.algorithm(f -> number(e, f, at), f -> duration(e, f, at)));
    } catch (IllegalArgumentException ex) {
      if (ex.getMessage().startsWith(at)) {
        throw ex;
      }
      throw new IllegalArgumentException(at + ": " + ex.getMessage(), ex);
    }
  }

  /** The policy's entry as it is written in configuration (for listings: the service, the Actuator). */
  public static Map<String, Object> describe(Policy p) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("name", p.name());
    m.put("algorithm", p.algorithm().id());
    AlgorithmKind kind = AlgorithmKind.of(p.algorithm());
    for (int i = 0; i < kind.parameters().size(); i++) {
      AlgorithmKind.Parameter param = kind.parameters().get(i);
      long v = kind.value(p.algorithm(), i);
      m.put(param.name(), param.period() ? format(v) : v);
    }
    return m;
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

  /**
   * The algorithm named {@code id} in configuration ({@code fixed-window}, ..., {@code sliding-log}),
   * as its canonical id; an unknown name is refused with the known ones.
   */
  public static String algorithm(String id) {
    return AlgorithmKind.parse(id).id();
  }

  /** Whether the algorithm named {@code id} has a burst of its own (the buckets), besides its rate. */
  public static boolean hasBurst(String id) {
    return AlgorithmKind.parse(id).hasBurst();
  }

  /** The algorithms that have a burst of their own, for a message: {@code token-bucket and gcra}. */
  public static String withBurst() {
    return AlgorithmKind.withBurst();
  }

  /**
   * The algorithm named {@code id} read as a rate, for a configuration in another grammar (Envoy's
   * {@code requests_per_unit} per {@code unit}): {@code rate} permits per {@code period}, with up to
   * {@code burst} at once for an algorithm that {@link #hasBurst has one} (the others ignore it).
   */
  public static dev.sluice.Algorithm perPeriod(String id, long rate, Duration period, long burst) {
    return AlgorithmKind.parse(id).perPeriod(rate, period, burst);
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
}
