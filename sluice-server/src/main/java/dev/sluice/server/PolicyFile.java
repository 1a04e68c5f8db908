package dev.sluice.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.sluice.Algorithm;
import dev.sluice.Policy;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The policy file of {@code sluice serve}: a YAML list of named policies, each an algorithm and its
 * parameters.
 *
 * <pre>{@code
 * policies:
 *   - name: login
 *     algorithm: fixed-window      # limit per window; a window opens on a key's first hit
 *     limit: 5
 *     window: 1m
 *   - name: api
 *     algorithm: token-bucket      # capacity, refilled refill-tokens every refill-period
 *     capacity: 100
 *     refill-tokens: 10
 *     refill-period: 1s
 * }</pre>
 * Algorithms and their parameters: {@code fixed-window}, {@code sliding-window}, {@code sliding-log}
 * (limit, window); {@code token-bucket} (capacity, refill-tokens, refill-period); {@code gcra} (rate,
 * period, burst). Durations: {@code 500ms}, {@code 1s}, {@code 5m}, {@code 1h}, {@code 1d} or ISO-8601.
 * Every mistake is reported with the entry it is in; nothing is guessed or defaulted silently.
 */
final class PolicyFile {
  private static final Map<String, List<String>> PARAMETERS = Map.of(
      "fixed-window", List.of("limit", "window"),
      "sliding-window", List.of("limit", "window"),
      "sliding-log", List.of("limit", "window"),
      "token-bucket", List.of("capacity", "refill-tokens", "refill-period"),
      "gcra", List.of("rate", "period", "burst"));

  private PolicyFile() {}

  /** Reads and validates {@code file}; every error is an {@link IllegalArgumentException} naming the file and the entry. */
  static List<Policy> read(Path file) {
    try (InputStream in = Files.newInputStream(file)) {
      return parse(new ObjectMapper(new YAMLFactory()).readTree(in), file.toString());
    } catch (NoSuchFileException e) {
      throw new IllegalArgumentException("policy file " + file + " does not exist");
    } catch (IOException e) {
      throw new IllegalArgumentException("policy file " + file + " is not valid YAML: " + firstLine(e.getMessage()));
    }
  }

  static List<Policy> parse(String yaml, String source) {
    try {
      return parse(new ObjectMapper(new YAMLFactory()).readTree(yaml), source);
    } catch (IOException e) {
      throw new IllegalArgumentException(source + " is not valid YAML: " + firstLine(e.getMessage()));
    }
  }

  private static List<Policy> parse(JsonNode root, String source) {
    if (root == null || !root.isObject() || !root.has("policies")) {
      throw new IllegalArgumentException(source + ": expected a top-level 'policies:' list");
    }
    for (Iterator<String> it = root.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!f.equals("policies")) {
        throw new IllegalArgumentException(source + ": unknown top-level field '" + f + "'; the file holds 'policies:' only");
      }
    }
    JsonNode list = root.get("policies");
    if (!list.isArray() || list.isEmpty()) {
      throw new IllegalArgumentException(source + ": 'policies' must be a non-empty list");
    }
    Map<String, Policy> byName = new LinkedHashMap<>();
    for (int i = 0; i < list.size(); i++) {
      Policy p = entry(list.get(i), source + ": policy #" + (i + 1));
      if (byName.putIfAbsent(p.name(), p) != null) {
        throw new IllegalArgumentException(source + ": policy #" + (i + 1) + " repeats the name '" + p.name()
            + "'; every policy needs its own name (the name is part of every key's identity)");
      }
    }
    return List.copyOf(byName.values());
  }

  private static Policy entry(JsonNode e, String where) {
    if (!e.isObject()) {
      throw new IllegalArgumentException(where + " is not a mapping; give name, algorithm and its parameters");
    }
    String name = text(e, "name", where);
    where = where + " ('" + name + "')";
    String algorithm = text(e, "algorithm", where);
    List<String> params = PARAMETERS.get(algorithm);
    if (params == null) {
      throw new IllegalArgumentException(where + ": unknown algorithm '" + algorithm + "'; use one of "
          + String.join(", ", List.of("fixed-window", "sliding-window", "token-bucket", "gcra", "sliding-log")));
    }
    for (Iterator<String> it = e.fieldNames(); it.hasNext(); ) {
      String f = it.next();
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

  private static String text(JsonNode e, String field, String where) {
    JsonNode v = e.get(field);
    if (v == null || v.isNull()) {
      throw new IllegalArgumentException(where + ": '" + field + "' is missing");
    }
    if (!v.isTextual() && !v.isNumber()) {
      throw new IllegalArgumentException(where + ": '" + field + "' must be a string");
    }
    return v.asText();
  }

  private static long number(JsonNode e, String field, String where) {
    JsonNode v = e.get(field);
    if (v == null || v.isNull()) {
      throw new IllegalArgumentException(where + ": '" + field + "' is missing");
    }
    if (!v.isIntegralNumber() || !v.canConvertToLong()) {
      throw new IllegalArgumentException(where + ": '" + field + "' is " + v + "; it must be a whole number");
    }
    return v.longValue();
  }

  private static Duration duration(JsonNode e, String field, String where) {
    JsonNode v = e.get(field);
    if (v == null || v.isNull()) {
      throw new IllegalArgumentException(where + ": '" + field + "' is missing");
    }
    if (v.isNumber()) {
      throw new IllegalArgumentException(where + ": '" + field + "' is " + v + " without a unit; write e.g. " + v + "s or " + v + "ms");
    }
    return Durations.parse(where + ": '" + field + "'", v.asText());
  }

  /** The policy's parameters as written in the file (for {@code GET /v1/policies}). */
  static Map<String, Object> describe(Policy p) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("name", p.name());
    m.put("algorithm", p.algorithm().id());
    Algorithm a = p.algorithm();
    if (a instanceof Algorithm.FixedWindow fw) {
      m.put("limit", fw.limit());
      m.put("window", Durations.format(fw.windowMicros()));
    } else if (a instanceof Algorithm.SlidingWindow sw) {
      m.put("limit", sw.limit());
      m.put("window", Durations.format(sw.windowMicros()));
    } else if (a instanceof Algorithm.SlidingLog sl) {
      m.put("limit", sl.limit());
      m.put("window", Durations.format(sl.windowMicros()));
    } else if (a instanceof Algorithm.TokenBucket tb) {
      m.put("capacity", tb.capacity());
      m.put("refill-tokens", tb.refillTokens());
      m.put("refill-period", Durations.format(tb.refillPeriodMicros()));
    } else if (a instanceof Algorithm.Gcra g) {
      m.put("rate", g.rate());
      m.put("period", Durations.format(g.periodMicros()));
      m.put("burst", g.burst());
    }
    return m;
  }

  /**
   * The span of time a policy's quota covers, in microseconds: the window, or for the buckets the
   * time to refill from empty. It is the {@code w} of the {@code RateLimit-Policy} header and the life
   * of a refund ticket (after it, the permits a ticket names have come back anyway).
   */
  static long quotaMicros(Algorithm a) {
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

  static Set<String> algorithms() {
    return PARAMETERS.keySet();
  }

  private static long ceilDiv(long a, long b) {
    return -Math.floorDiv(-a, b);
  }

  private static String firstLine(String s) {
    if (s == null) {
      return "unreadable";
    }
    int nl = s.indexOf('\n');
    return nl < 0 ? s : s.substring(0, nl);
  }
}
