package dev.sluice.spring;

import dev.sluice.Policy;
import dev.sluice.kernel.PolicyWords;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One entry of {@code sluice.policies}: the shape of {@code sluice serve}'s policy file, field for
 * field. This class only carries what Spring's binder read (so that IDEs complete the fields); what
 * an entry means and every rule about it (which parameters an algorithm takes, durations, bounds,
 * messages) is {@code PolicyWords}'s, the one definition the service uses too.
 */
public class PolicyEntry {
  /**
   * The fields' names in Boot's uniform form (lower case, no dashes: {@code refilltokens}), as a
   * property's last element reads; read off the fields themselves, so a new field is known at once.
   */
  static final java.util.Set<String> FIELDS = java.util.Arrays.stream(PolicyEntry.class.getDeclaredFields())
      .filter(f -> !java.lang.reflect.Modifier.isStatic(f.getModifiers()))
      .map(f -> f.getName().toLowerCase(java.util.Locale.ROOT)).collect(java.util.stream.Collectors.toUnmodifiableSet());
  private String name;
  private String base;
  private String algorithm;
  private Long limit;
  private String window;
  private Long capacity;
  private Long refillTokens;
  private String refillPeriod;
  private Long rate;
  private String period;
  private Long burst;

  /** The policy's name: part of every key's identity. */
  public String getName() { return name; }

  public void setName(String name) { this.name = name; }

  /**
   * Another entry's name whose fields this one takes, its own winning (Resilience4j's baseConfig):
   * {@code {name: search, base: default, limit: 3}}.
   */
  public String getBase() { return base; }

  public void setBase(String base) { this.base = base; }

  /** fixed-window, sliding-window, sliding-log, token-bucket or gcra. */
  public String getAlgorithm() { return algorithm; }

  public void setAlgorithm(String algorithm) { this.algorithm = algorithm; }

  /** Permits per window (fixed-window, sliding-window, sliding-log). */
  public Long getLimit() { return limit; }

  public void setLimit(Long limit) { this.limit = limit; }

  /** The window, such as 1m or 500ms (fixed-window, sliding-window, sliding-log). */
  public String getWindow() { return window; }

  public void setWindow(String window) { this.window = window; }

  /** The bucket's size (token-bucket). */
  public Long getCapacity() { return capacity; }

  public void setCapacity(Long capacity) { this.capacity = capacity; }

  /** Tokens added every refill-period (token-bucket). */
  public Long getRefillTokens() { return refillTokens; }

  public void setRefillTokens(Long refillTokens) { this.refillTokens = refillTokens; }

  /** How often refill-tokens are added, such as 1s (token-bucket). */
  public String getRefillPeriod() { return refillPeriod; }

  public void setRefillPeriod(String refillPeriod) { this.refillPeriod = refillPeriod; }

  /** Permits per period (gcra). */
  public Long getRate() { return rate; }

  public void setRate(Long rate) { this.rate = rate; }

  /** The period of rate, such as 1s (gcra). */
  public String getPeriod() { return period; }

  public void setPeriod(String period) { this.period = period; }

  /** The largest burst (gcra). */
  public Long getBurst() { return burst; }

  public void setBurst(Long burst) { this.burst = burst; }

  /** The entry as the shape reads it: the fields that were set, under the policy file's names. */
  Map<String, Object> fields() {
    Map<String, Object> m = new LinkedHashMap<>();
    put(m, "name", name);
    put(m, "base", base);
    put(m, "algorithm", algorithm);
    put(m, "limit", limit);
    put(m, "window", duration(window));
    put(m, "capacity", capacity);
    put(m, "refill-tokens", refillTokens);
    put(m, "refill-period", duration(refillPeriod));
    put(m, "rate", rate);
    put(m, "period", duration(period));
    put(m, "burst", burst);
    return m;
  }

  /**
   * A duration as YAML wrote it: the binder turns {@code window: 60} into the text "60", which the
   * shape is handed back as the number it was, so that it answers as it does for the service's file
   * ("is 60 without a unit").
   */
  private static Object duration(String text) {
    if (text != null && !text.isEmpty() && text.length() <= 18 && text.chars().allMatch(c -> c >= '0' && c <= '9')) {
      return Long.parseLong(text);
    }
    return text;
  }


  private static void put(Map<String, Object> m, String k, Object v) {
    if (v != null) {
      m.put(k, v);
    }
  }
}
