package dev.sluice.kernel;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;

/**
 * How the front ends compose keys, the one rule of the HTTP key resolvers, the Spring starter's key
 * expressions and annotations, and the service's Envoy mode: every value a client can influence is
 * namespaced by its source, and the parts of a composed key are joined so that distinct lists of
 * parts never give one key.
 *
 * <pre>
 * key  = part / element *("|" element)    join: each element escaped, joined by '|'
 * part = source ":" value                 a source's value:  ip:203.0.113.7, user:alice, value:all ({@link #key})
 *      / kind ":" name ":" value          a named source's:  header:x-api-key:abc123
 *      / source "~" pattern               a pattern every value matching it shares (Envoy's share_threshold)
 * </pre>
 *
 * <p>In a source or a name, {@code \ | : ~} are escaped with a backslash; in a value, {@code \} and
 * {@code |}. So a part has no unescaped {@code |} and its source ends at its first unescaped
 * {@code :} or {@code ~}: two parts are equal only when their sources and values are, and a part is
 * never equal to a joined key (which has an unescaped {@code |}). Whether a source carries a name is
 * fixed by its kind ({@link #HEADER} always does, the others never), so {@code header:a:b} reads one
 * way only. None of these keys is {@code unknown}, the front ends' key for no identity, or a
 * {@link #hashed} key ({@code sha256:} is no source). Values with none of the escaped characters
 * read as written ({@code user:alice|route:GET /export}), and IPv6 addresses keep their colons.
 */
public final class Keys {
  /** A client's address: {@code ip:203.0.113.7}. */
  public static final String IP = "ip";
  /** An authenticated principal's name: {@code user:alice}. */
  public static final String USER = "user";
  /** A request's method and path: {@code route:GET /search}. */
  public static final String ROUTE = "route";
  /** A request's method alone: {@code method:GET}. */
  public static final String METHOD = "method";
  /** A request's path alone: {@code path:/search}. */
  public static final String PATH = "path";
  /** A request header, named: {@code header:x-api-key:abc123}. */
  public static final String HEADER = "header";
  /** A literal or a computed value (a Spring key expression's result that is no request source's): {@code value:all}. */
  public static final String VALUE = "value";
  /** The prefix of a {@link #hashed} key; no source is called this. */
  public static final String HASHED = "sha256:";

  private static final HexFormat HEX = HexFormat.of();

  private Keys() {}

  /**
   * The key of {@code source}'s {@code value}, {@code source:value}; null when the value is null or
   * blank: the source offers no identity, and a front end charges its one shared {@code unknown} key.
   */
  public static String key(String source, String value) {
    return value == null || value.isBlank() ? null : part(source, value);
  }

  /** {@link #key(String, String)} of a source that carries a name ({@link #HEADER}): {@code kind:name:value}. */
  public static String key(String kind, String name, String value) {
    if (value == null || value.isBlank()) {
      return null;
    }
    StringBuilder b = new StringBuilder(kind.length() + name.length() + value.length() + 2);
    escape(b, kind, true).append(':');
    escape(b, name, true).append(':');
    return escape(b, value, false).toString();
  }

  /** {@code source:value}, whatever the value (an Envoy descriptor entry's may be empty). */
  public static String part(String source, String value) {
    StringBuilder b = new StringBuilder(source.length() + value.length() + 1);
    escape(b, source, true).append(':');
    return escape(b, value, false).toString();
  }

  /** {@code source~pattern}: the one part of every value that matches {@code pattern} (Envoy's {@code share_threshold}). */
  public static String sharedPart(String source, String pattern) {
    StringBuilder b = new StringBuilder(source.length() + pattern.length() + 1);
    escape(b, source, true).append('~');
    return escape(b, pattern, false).toString();
  }

  /**
   * The key of header {@code name}'s {@code value}: {@code header:<name in lower case>:<value stripped>};
   * null when the value is null or blank. Header names are case-insensitive; surrounding whitespace is
   * no part of a field's value.
   */
  public static String header(String name, String value) {
    return key(HEADER, name.toLowerCase(Locale.ROOT), value == null ? null : value.strip());
  }

  /**
   * Joins {@code elements} (any strings, at least one): each escaped ({@code \} and {@code |}), then
   * joined by {@code |}. {@link #split} reads them back, so distinct lists never give one key.
   */
  public static String join(List<String> elements) {
    if (elements.isEmpty()) {
      throw new IllegalArgumentException("a key joins at least one element");
    }
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < elements.size(); i++) {
      if (i > 0) {
        b.append('|');
      }
      escape(b, elements.get(i), false);
    }
    return b.toString();
  }

  /** {@link #join} of two elements: {@code principal().and(route())}'s {@code user:alice|route:GET /export}. */
  public static String join(String first, String second) {
    return join(List.of(first, second));
  }

  /** The elements {@link #join} joined, unescaped. */
  public static List<String> split(String key) {
    List<String> out = new ArrayList<>();
    StringBuilder e = new StringBuilder();
    for (int i = 0, n = key.length(); i < n; i++) {
      char c = key.charAt(i);
      if (c == '\\' && i + 1 < n) {
        e.append(key.charAt(++i));
      } else if (c == '|') {
        out.add(e.toString());
        e.setLength(0);
      } else {
        e.append(c);
      }
    }
    out.add(e.toString());
    return out;
  }

  /**
   * {@code sha256:} and the 64 hex digits of the SHA-256 of {@code key}'s UTF-8: the stand-in of a key
   * too long for a front end's cap (a JWT as API key), 71 characters whatever the key.
   */
  public static String hashed(String key) {
    try {
      return HASHED + HEX.formatHex(MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every JVM", e);
    }
  }

  private static StringBuilder escape(StringBuilder b, String s, boolean source) {
    for (int i = 0, n = s.length(); i < n; i++) {
      char c = s.charAt(i);
      if (c == '\\' || c == '|' || (source && (c == ':' || c == '~'))) {
        b.append('\\');
      }
      b.append(c);
    }
    return b;
  }
}
