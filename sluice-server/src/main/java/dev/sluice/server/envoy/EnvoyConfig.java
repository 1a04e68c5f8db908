package dev.sluice.server.envoy;

import dev.sluice.Policy;
import dev.sluice.kernel.Keys;
import dev.sluice.kernel.PolicyWords;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.error.YAMLException;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;

/**
 * The rate-limit configuration of envoyproxy/ratelimit, read as that service reads it: one YAML file
 * per domain, or a directory of them ({@code *.yaml}, {@code *.yml}; dot files skipped), each a
 * {@code domain} and nested {@code descriptors} with {@code key}, optional {@code value} (a {@code *}
 * matches any run of characters), {@code rate_limit} ({@code unit}, {@code requests_per_unit},
 * {@code name}, {@code replaces}, {@code unlimited}), {@code shadow_mode}, {@code detailed_metric},
 * {@code value_to_metric}, {@code share_threshold}, {@code metadata} and {@code quota_mode: false}.
 *
 * <p>One extension, inside {@code rate_limit}: a {@code sluice} block choosing the algorithm
 * ({@code fixed-window}, the default, {@code sliding-window}, {@code token-bucket}, {@code gcra},
 * {@code sliding-log}: {@link PolicyWords#perPeriod}, read as {@code requests_per_unit} per {@code unit}) and,
 * for the two buckets, a {@code burst} (the default is {@code requests_per_unit}). Every key is checked where it stands: an unknown one is an error naming
 * the file, the line and the key; nothing is ignored silently.
 *
 * <p>This file is over 500 lines because it is one format's reader: the reference's YAML, key by key,
 * each with the error that names file, line and key; splitting it would split one grammar.
 */
public final class EnvoyConfig {
  static final Set<String> ROOT_KEYS = Set.of("domain", "descriptors");
  static final Set<String> DESCRIPTOR_KEYS = Set.of("key", "value", "rate_limit", "descriptors", "shadow_mode", "quota_mode",
      "detailed_metric", "value_to_metric", "share_threshold", "metadata");
  static final Set<String> RATE_LIMIT_KEYS = Set.of("unit", "requests_per_unit", "unlimited", "name", "replaces", "sluice");
  static final Set<String> SLUICE_KEYS = Set.of("algorithm", "burst");

  /** A unit of envoyproxy/ratelimit and its length: a month is 30 days and a year 365, as there. */
  enum Unit {
    SECOND(1), MINUTE(60), HOUR(3_600), DAY(86_400), WEEK(604_800), MONTH(2_592_000), YEAR(31_536_000);

    final long seconds;

    Unit(long seconds) {
      this.seconds = seconds;
    }

    Duration duration() {
      return Duration.ofSeconds(seconds);
    }

    static Unit parse(String s) {
      for (Unit u : values()) {
        if (u.name().equalsIgnoreCase(s)) {
          return u;
        }
      }
      return null;
    }
  }

  /**
   * One {@code rate_limit} block. {@code policy} is null for {@code unlimited} and for
   * {@code requests_per_unit: 0} (every hit is over the limit, as in envoyproxy/ratelimit).
   */
  record Rule(String domain, String statKey, Policy policy, Unit unit, long requestsPerUnit, String name,
              List<String> replaces, boolean unlimited, boolean shadowMode, boolean detailedMetric) {
    boolean deniesAll() {
      return !unlimited && requestsPerUnit == 0;
    }
  }

  /** One descriptor of the tree: its rule (or none) and the descriptors nested in it. */
  static final class Node {
    final String key;
    final String value;
    final String[] wildcard; // the value split on '*', or null when the value has none
    final boolean valueToMetric;
    final boolean shareThreshold;
    Rule rule;
    final Map<String, Node> children = new HashMap<>();
    final List<Node> wildcards = new ArrayList<>();

    Node(String key, String value, boolean valueToMetric, boolean shareThreshold) {
      this.key = key;
      this.value = value;
      this.wildcard = value != null && value.contains("*") ? value.split("\\*", -1) : null;
      this.valueToMetric = valueToMetric;
      this.shareThreshold = shareThreshold;
    }

    /** The name of this descriptor in stat keys and in its level's map: {@code key} or {@code key_value}. */
    String finalKey() {
      return value == null ? key : key + "_" + value;
    }

    boolean matches(String v) {
      return Wildcard.matches(wildcard, v);
    }
  }

  private final Map<String, Node> domains;
  private final List<Rule> rules;

  private EnvoyConfig(Map<String, Node> domains, List<Rule> rules) {
    this.domains = domains;
    this.rules = rules;
  }

  /** The domains configured, in the order read. */
  public Set<String> domains() {
    return domains.keySet();
  }

  /** Every rule's Sluice policy (unlimited and deny-all rules have none), for the store's check. */
  public List<Policy> policies() {
    return rules.stream().map(Rule::policy).filter(p -> p != null).toList();
  }

  List<Rule> rules() {
    return rules;
  }

  Node domain(String domain) {
    return domains.get(domain);
  }

  /** What one request descriptor matched: the rule, the budget's key and the stat key of its meters. */
  record Match(Rule rule, String key, String statKey) {}

  /** Keys longer than this are replaced by a hash of them, so a long value is never a store error. */
  static final int MAX_PLAIN_KEY = 256;

  /**
   * The rule for one descriptor's entries, as envoyproxy/ratelimit finds it: level by level, the
   * exact {@code key_value} first, then the level's wildcard values in the order written, then the
   * bare {@code key}; a rule applies only at the level of the descriptor's last entry. Null when no
   * rule matches (the descriptor is not limited).
   */
  Match match(String domain, List<Map.Entry<String, String>> entries) {
    Node level = domains.get(domain);
    if (level == null || entries.isEmpty()) {
      return null;
    }
    Rule found = null;
    Node[] path = new Node[entries.size()];
    boolean[] byWildcard = new boolean[entries.size()];
    int depth = 0;
    for (int i = 0; i < entries.size(); i++) {
      String k = entries.get(i).getKey();
      String v = entries.get(i).getValue();
      Node next = level.children.get(k + "_" + v);
      if (next == null) {
        for (Node w : level.wildcards) {
          if (w.key.equals(k) && w.matches(v)) {
            next = w;
            byWildcard[i] = true;
            break;
          }
        }
      }
      if (next == null) {
        next = level.children.get(k);
      }
      if (next == null) {
        break;
      }
      path[i] = next;
      depth = i + 1;
      if (next.rule != null && i == entries.size() - 1) {
        found = next.rule;
      }
      if (next.children.isEmpty()) {
        break;
      }
      level = next;
    }
    if (found == null) {
      return null;
    }
    List<String> key = new ArrayList<>(entries.size() + 1);
    key.add(domain);
    StringBuilder stat = new StringBuilder(domain);
    for (int i = 0; i < entries.size(); i++) {
      String k = entries.get(i).getKey();
      String v = entries.get(i).getValue();
      Node n = i < depth ? path[i] : null;
      boolean shared = n != null && byWildcard[i] && n.shareThreshold;
      key.add(shared ? Keys.sharedPart(k, n.value) : entry(k, v));
      stat.append('.');
      if (found.detailedMetric()) {
        stat.append(k);
        String shown = shared ? n.value : v;
        if (!shown.isEmpty()) {
          stat.append('_').append(shown);
        }
      } else {
        String shown = n == null ? "" : byWildcard[i] ? (shared ? n.value : n.valueToMetric ? v : n.value)
            : n.value != null ? v : n.valueToMetric ? v : "";
        stat.append(k);
        if (!shown.isEmpty()) {
          stat.append('_').append(shown);
        }
      }
    }
    return new Match(found, bounded(Keys.join(key)), stat.toString());
  }

  /**
   * The budget key of a descriptor's own limit (entries under no rule): the domain, then every
   * {@code key:value}.
   */
  static String plainKey(String domain, List<Map.Entry<String, String>> entries) {
    List<String> key = new ArrayList<>(entries.size() + 1);
    key.add(domain);
    for (Map.Entry<String, String> e : entries) {
      key.add(entry(e.getKey(), e.getValue()));
    }
    return bounded(Keys.join(key));
  }

  /** One entry's part of a budget key, {@code key:value}: the value namespaced by its entry's key ({@link Keys#part}). */
  private static String entry(String key, String value) {
    return Keys.part(key, value);
  }

  private static String bounded(String key) {
    return key.length() > MAX_PLAIN_KEY ? Keys.hashed(key) : key;
  }

  /** Reads {@code path}: one file, or every {@code *.yaml} / {@code *.yml} file of a directory in name order. */
  public static EnvoyConfig read(Path path) {
    List<Path> files;
    if (Files.isDirectory(path)) {
      try (Stream<Path> s = Files.list(path)) {
        files = s.filter(f -> {
          String n = f.getFileName().toString();
          return !n.startsWith(".") && (n.endsWith(".yaml") || n.endsWith(".yml")) && Files.isRegularFile(f);
        }).sorted().toList();
      } catch (IOException e) {
        throw new IllegalArgumentException("--envoy-config " + path + " cannot be listed: " + e.getMessage());
      }
      if (files.isEmpty()) {
        throw new IllegalArgumentException("--envoy-config " + path + " holds no *.yaml or *.yml file");
      }
    } else {
      files = List.of(path);
    }
    Map<String, String> sources = new LinkedHashMap<>();
    for (Path f : files) {
      try {
        sources.put(f.toString(), Files.readString(f, StandardCharsets.UTF_8));
      } catch (NoSuchFileException e) {
        throw new IllegalArgumentException("--envoy-config " + f + " does not exist");
      } catch (IOException e) {
        throw new IllegalArgumentException("--envoy-config " + f + " cannot be read: " + e.getMessage());
      }
    }
    return parse(sources);
  }

  /** Parses named YAML texts (file name to content), one domain each. */
  static EnvoyConfig parse(Map<String, String> sources) {
    Map<String, Node> domains = new LinkedHashMap<>();
    List<Rule> rules = new ArrayList<>();
    for (Map.Entry<String, String> e : sources.entrySet()) {
      new Loader(e.getKey(), domains, rules).load(e.getValue());
    }
    if (domains.isEmpty()) {
      throw new IllegalArgumentException("--envoy-config: no domain configured");
    }
    return new EnvoyConfig(Map.copyOf(domains), List.copyOf(rules));
  }

  /** One file's reading: every error names the file, the line and the key. */
  private static final class Loader {
    private final String file;
    private final Map<String, Node> domains;
    private final List<Rule> rules;
    private String domain;

    Loader(String file, Map<String, Node> domains, List<Rule> rules) {
      this.file = file;
      this.domains = domains;
      this.rules = rules;
    }

    private IllegalArgumentException error(org.yaml.snakeyaml.nodes.Node at, String message) {
      return new IllegalArgumentException(file + ":" + (at.getStartMark().getLine() + 1) + ": " + message);
    }

    void load(String text) {
      org.yaml.snakeyaml.nodes.Node root;
      try (Reader r = new java.io.StringReader(text)) {
        root = new Yaml(new LoaderOptions()).compose(r);
      } catch (YAMLException | IOException e) {
        throw new IllegalArgumentException(file + ": not valid YAML: " + firstLine(e.getMessage()));
      }
      if (root == null) {
        throw new IllegalArgumentException(file + ": empty; expected 'domain:' and 'descriptors:'");
      }
      Map<String, NodeTuple> top = mapping(root, ROOT_KEYS, "the top level", "domain, descriptors");
      domain = top.containsKey("domain") ? string(top.get("domain")) : "";
      if (domain.isEmpty()) {
        throw error(root, "'domain' is missing or empty; every file configures one domain");
      }
      if (domains.containsKey(domain)) {
        throw error(top.get("domain").getValueNode(), "domain '" + domain + "' is configured twice; one file per domain");
      }
      Node d = new Node(domain, null, false, false);
      if (top.containsKey("descriptors")) {
        descriptors(d, top.get("descriptors").getValueNode(), domain);
      }
      domains.put(domain, d);
    }

    private void descriptors(Node parent, org.yaml.snakeyaml.nodes.Node list, String parentKey) {
      if (isNull(list)) {
        return;
      }
      if (!(list instanceof SequenceNode seq)) {
        throw error(list, "'descriptors' must be a list");
      }
      for (org.yaml.snakeyaml.nodes.Node item : seq.getValue()) {
        Map<String, NodeTuple> m = mapping(item, DESCRIPTOR_KEYS, "a descriptor",
            "key, value, rate_limit, descriptors, shadow_mode, detailed_metric, value_to_metric, share_threshold, metadata, quota_mode");
        String key = m.containsKey("key") ? string(m.get("key")) : "";
        if (key.isEmpty()) {
          throw error(item, "descriptor has an empty or missing 'key'");
        }
        String value = m.containsKey("value") ? string(m.get("value")) : "";
        boolean shareThreshold = bool(m.get("share_threshold"));
        Node n = new Node(key, value.isEmpty() ? null : value, bool(m.get("value_to_metric")), shareThreshold);
        String composite = parentKey + "." + n.finalKey();
        if (parent.children.containsKey(n.finalKey())) {
          throw error(item, "duplicate descriptor composite key '" + composite + "'");
        }
        if (shareThreshold && n.wildcard == null) {
          throw error(m.get("share_threshold").getKeyNode(), "share_threshold needs a wildcard value (one with '*'), not '" + value + "'");
        }
        if (bool(m.get("quota_mode"))) {
          throw error(m.get("quota_mode").getKeyNode(), "quota_mode: true is not supported by Sluice; remove it or set it to false");
        }
        if (m.containsKey("rate_limit")) {
          n.rule = rule(m.get("rate_limit").getValueNode(), composite, bool(m.get("shadow_mode")), bool(m.get("detailed_metric")));
        }
        if (m.containsKey("descriptors")) {
          descriptors(n, m.get("descriptors").getValueNode(), composite);
        }
        parent.children.put(n.finalKey(), n);
        if (n.wildcard != null) {
          parent.wildcards.add(n);
        }
      }
    }

    private Rule rule(org.yaml.snakeyaml.nodes.Node at, String statKey, boolean shadow, boolean detailed) {
      Map<String, NodeTuple> m = mapping(at, RATE_LIMIT_KEYS, "rate_limit", "unit, requests_per_unit, unlimited, name, replaces, sluice");
      boolean unlimited = bool(m.get("unlimited"));
      String unitText = m.containsKey("unit") ? string(m.get("unit")) : "";
      Unit unit = Unit.parse(unitText);
      if (unlimited && unit != null) {
        throw error(m.get("unit").getKeyNode(), "should not specify rate limit unit when unlimited");
      }
      if (!unlimited && unit == null) {
        throw error(m.containsKey("unit") ? m.get("unit").getValueNode() : at, "invalid rate limit unit '" + unitText
            + "'; use second, minute, hour, day, week, month or year");
      }
      long rpu = 0;
      if (m.containsKey("requests_per_unit")) {
        NodeTuple t = m.get("requests_per_unit");
        String s = string(t);
        try {
          rpu = Long.parseLong(s);
        } catch (NumberFormatException e) {
          rpu = -1;
        }
        if (rpu < 0 || rpu > 0xFFFF_FFFFL) {
          throw error(t.getValueNode(), "requests_per_unit '" + s + "' is not a whole number from 0 to 4294967295");
        }
      }
      String name = m.containsKey("name") ? string(m.get("name")) : "";
      List<String> replaces = new ArrayList<>();
      if (m.containsKey("replaces")) {
        org.yaml.snakeyaml.nodes.Node list = m.get("replaces").getValueNode();
        if (!(list instanceof SequenceNode seq)) {
          throw error(list, "'replaces' must be a list of '- name: ...'");
        }
        for (org.yaml.snakeyaml.nodes.Node r : seq.getValue()) {
          Map<String, NodeTuple> rm = mapping(r, Set.of("name"), "a replaces entry", "name");
          String replaced = rm.containsKey("name") ? string(rm.get("name")) : "";
          if (replaced.isEmpty()) {
            throw error(r, "should not have an empty replaces entry");
          }
          if (replaced.equals(name)) {
            throw error(r, "replaces should not contain name of same descriptor ('" + name + "')");
          }
          replaces.add(replaced);
        }
      }
      String algorithm = "fixed-window";
      Long burst = null;
      if (m.containsKey("sluice")) {
        Map<String, NodeTuple> s = mapping(m.get("sluice").getValueNode(), SLUICE_KEYS, "the sluice extension", "algorithm, burst");
        if (s.containsKey("algorithm")) {
          try {
            algorithm = PolicyWords.algorithm(string(s.get("algorithm")));
          } catch (IllegalArgumentException e) {
            throw error(s.get("algorithm").getValueNode(), e.getMessage());
          }
        }
        if (s.containsKey("burst")) {
          if (!PolicyWords.hasBurst(algorithm)) {
            throw error(s.get("burst").getKeyNode(), "burst applies to " + PolicyWords.withBurst() + ", not to " + algorithm);
          }
          try {
            burst = Long.parseLong(string(s.get("burst")));
          } catch (NumberFormatException e) {
            throw error(s.get("burst").getValueNode(), "burst '" + string(s.get("burst")) + "' is not a whole number");
          }
        }
        if (unlimited) {
          throw error(m.get("sluice").getKeyNode(), "an unlimited rule has no algorithm");
        }
      }
      Policy policy = null;
      if (!unlimited && rpu > 0) {
        String pn = policyName(statKey);
        Duration w = unit.duration();
        long b = burst == null ? rpu : burst;
        try {
          policy = new Policy(pn, PolicyWords.perPeriod(algorithm, rpu, w, b));
        } catch (IllegalArgumentException e) {
          throw error(at, "rate limit of '" + statKey + "' (" + rpu + " per " + unit.name().toLowerCase(Locale.ROOT) + ", "
              + algorithm + "): " + e.getMessage());
        }
      }
      Rule r = new Rule(domain, statKey, policy, unit, rpu, name, List.copyOf(replaces), unlimited, shadow, detailed);
      rules.add(r);
      return r;
    }

    /** A mapping's entries by key, every key checked against {@code allowed}. */
    private Map<String, NodeTuple> mapping(org.yaml.snakeyaml.nodes.Node n, Set<String> allowed, String what, String usage) {
      if (!(n instanceof MappingNode mn)) {
        throw error(n, what + " must be a mapping (" + usage + ")");
      }
      Map<String, NodeTuple> out = new LinkedHashMap<>();
      for (NodeTuple t : mn.getValue()) {
        if (!(t.getKeyNode() instanceof ScalarNode k)) {
          throw error(t.getKeyNode(), "a key in " + what + " is not a string");
        }
        if (!allowed.contains(k.getValue())) {
          throw error(k, "unknown key '" + k.getValue() + "' in " + what + "; allowed here: " + usage);
        }
        if (out.put(k.getValue(), t) != null) {
          throw error(k, "key '" + k.getValue() + "' is given twice in " + what);
        }
      }
      return out;
    }

    private String string(NodeTuple t) {
      org.yaml.snakeyaml.nodes.Node v = t.getValueNode();
      if (isNull(v)) {
        return "";
      }
      if (!(v instanceof ScalarNode s)) {
        throw error(v, "'" + ((ScalarNode) t.getKeyNode()).getValue() + "' must be a single value, not a list or mapping");
      }
      return s.getValue();
    }

    private boolean bool(NodeTuple t) {
      if (t == null) {
        return false;
      }
      String s = string(t);
      return switch (s.toLowerCase(Locale.ROOT)) {
        case "true", "yes", "on" -> true;
        case "false", "no", "off", "" -> false;
        default -> throw error(t.getValueNode(), "'" + ((ScalarNode) t.getKeyNode()).getValue() + "' is '" + s + "'; use true or false");
      };
    }

    private static boolean isNull(org.yaml.snakeyaml.nodes.Node n) {
      return n instanceof ScalarNode s && s.getTag().getValue().endsWith(":null");
    }
  }

  /**
   * The Sluice policy name of a rule: its stat key when that is a valid policy name, else a readable
   * prefix and a hash of it. Deterministic, so every process names the same budget alike.
   */
  static String policyName(String statKey) {
    String clean = statKey.replaceAll("[^A-Za-z0-9._:-]", "_");
    if (clean.equals(statKey) && clean.length() <= 64 && Character.isLetterOrDigit(clean.charAt(0))) {
      return clean;
    }
    String hash = sha256Hex(statKey).substring(0, 16);
    String head = clean.replaceAll("^[^A-Za-z0-9]+", "");
    head = head.substring(0, Math.min(head.length(), 64 - 17));
    return (head.isEmpty() ? "r" : head) + "-" + hash;
  }

  static String sha256Hex(String s) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }

  private static String firstLine(String s) {
    if (s == null) {
      return "unreadable";
    }
    int nl = s.indexOf('\n');
    return nl < 0 ? s : s.substring(0, nl);
  }
}
