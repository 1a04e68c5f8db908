package dev.sluice.http;

import dev.sluice.kernel.Inputs;
import dev.sluice.kernel.Keys;
import java.security.Principal;
import java.util.ArrayList;
import java.util.List;

/**
 * Who a request counts against. Returns the key, or null when the request carries no identity of
 * that kind; the filter then charges the one shared {@link #UNKNOWN} key, never a fresh one, so
 * requests without an identity are throttled together instead of each minting a new budget.
 *
 * <p>Every key is namespaced by its source ({@code ip:}, {@code user:}, {@code route:},
 * {@code header:<name>:}), so that no value a client sends can equal the key of another source, and
 * {@link #and} joins its parts so that distinct parts never give one key: a client sending
 * {@code X-Api-Key: ip:127.0.0.1} gets {@code header:x-api-key:ip:127.0.0.1}, never the budget of
 * 127.0.0.1. No key equals {@code unknown}. A resolver of your own returns its key as it is: give it
 * a source of its own ({@code "tenant:" + id}), so that it cannot meet these.
 *
 * <p><b>Client addresses.</b> By default only the connecting peer's address is used: every
 * forwarding header is client-appendable. Believe {@code X-Forwarded-For} or {@code X-Real-IP} only
 * behind proxies you name ({@link #forwardedFor}, {@link #proxyHeader(String, TrustedProxies)}).
 */
@FunctionalInterface
public interface KeyResolver {

  /** The one key charged for every request that has no identity of the resolver's kind. */
  String UNKNOWN = "unknown";

  /** The key of {@code request}, or null when it has none (then {@link #UNKNOWN} is charged). */
  String resolve(RequestView request);

  /** The connecting peer's address: {@code ip:203.0.113.7}. Ignores every forwarding header. */
  static KeyResolver clientAddress() {
    return r -> ipKey(IpLiteral.parse(r.remoteAddress()));
  }

  /**
   * The address in {@code header} (such as {@code X-Real-IP}), believed unconditionally. Use it only
   * when an edge proxy always overwrites that header with the connecting address and the
   * application cannot be reached around that proxy; otherwise any client can pick its own key.
   * A value that is not an IP literal maps to {@link #UNKNOWN}.
   */
  static KeyResolver proxyHeader(String header) {
    String name = headerName(header);
    return r -> ipKey(IpLiteral.parse(r.header(name)));
  }

  /**
   * The address in {@code header} (such as {@code X-Real-IP}) when the connecting peer is one of
   * {@code proxies}; otherwise the peer's own address (a client talking to us directly cannot
   * choose its key).
   */
  static KeyResolver proxyHeader(String header, TrustedProxies proxies) {
    String name = headerName(header);
    Inputs.notNull("proxies", proxies);
    return r -> {
      byte[] peer = IpLiteral.parse(r.remoteAddress());
      if (peer == null || !proxies.contains(peer)) {
        return ipKey(peer);
      }
      return ipKey(IpLiteral.parse(r.header(name)));
    };
  }

  /**
   * The rightmost untrusted hop of {@code X-Forwarded-For}: walking the header from the right (the
   * hop our own proxy appended) past every trusted proxy, the first address not in {@code proxies}
   * is the client. When the connecting peer is not a trusted proxy, the header is ignored and the
   * peer's address is the key: a client cannot choose its key by sending the header itself. A hop
   * that is not an IP literal (garbage behind a trusted proxy) maps to {@link #UNKNOWN}.
   */
  static KeyResolver forwardedFor(TrustedProxies proxies) {
    Inputs.notNull("proxies", proxies);
    return r -> ForwardedFor.clientOf(r, proxies);
  }

  /**
   * {@link #forwardedFor} for the standard {@code Forwarded} header (RFC 7239): the {@code for=}
   * parameter of the rightmost element not from a trusted proxy. Obfuscated identifiers
   * ({@code for=_hidden}, {@code for=unknown}) and malformed elements map to {@link #UNKNOWN}.
   */
  static KeyResolver forwarded(TrustedProxies proxies) {
    Inputs.notNull("proxies", proxies);
    return r -> ForwardedFor.clientOfForwarded(r, proxies);
  }

  /**
   * The value of header {@code name}: {@code header:x-api-key:abc123} for {@code header("X-Api-Key")}
   * (the name in lower case, the value stripped; a {@code |} or {@code \} in it escaped).
   */
  static KeyResolver header(String name) {
    String header = headerName(name);
    return r -> Keys.header(header, r.header(header));
  }

  /** The authenticated principal's name: {@code user:alice}. */
  static KeyResolver principal() {
    return r -> {
      Principal p = r.principal();
      return p == null ? null : Keys.key(Keys.USER, p.getName());
    };
  }

  /**
   * The route: {@code route:GET /search}. The path is taken as sent, so a path with ids in it
   * ({@code /users/42}) is a key per id; combine with a fixed-route resolver of your own for those.
   */
  static KeyResolver route() {
    return r -> Keys.key(Keys.ROUTE, r.method() + " " + r.path());
  }

  /** This resolver's key, or {@code other}'s when this one has none: {@code principal().orElse(clientAddress())}. */
  default KeyResolver orElse(KeyResolver other) {
    Inputs.notNull("other", other);
    return r -> {
      String k = resolve(r);
      return k != null ? k : other.resolve(r);
    };
  }

  /**
   * Both keys joined ({@code user:alice|route:POST /export}); none when either has none. Each key's
   * own {@code |} and {@code \} are escaped, so two different pairs never give one key.
   */
  default KeyResolver and(KeyResolver other) {
    Inputs.notNull("other", other);
    return r -> {
      String a = resolve(r);
      if (a == null) {
        return null;
      }
      String b = other.resolve(r);
      return b == null ? null : Keys.join(a, b);
    };
  }

  private static String ipKey(byte[] address) {
    return IpLiteral.key(address);
  }

  private static String headerName(String header) {
    if (header == null || header.isBlank()) {
      throw new IllegalArgumentException("header name " + (header == null ? "null" : Inputs.quote(header))
          + " is blank; name a header such as \"X-Real-IP\"");
    }
    return header.strip();
  }
}

/** The X-Forwarded-For walk, kept out of the interface so it can loop without allocating a split array. */
final class ForwardedFor {
  /** Hops examined at most; a longer chain of trusted proxies is not a deployment, it is an attack. */
  static final int MAX_HOPS = 32;

  private ForwardedFor() {}

  static String clientOf(RequestView r, TrustedProxies proxies) {
    byte[] peer = IpLiteral.parse(r.remoteAddress());
    if (peer == null) {
      return null;
    }
    if (!proxies.contains(peer)) {
      return IpLiteral.key(peer);
    }
    List<String> lines = r.headers("X-Forwarded-For");
    byte[] leftmost = null;
    int hops = 0;
    for (int line = lines.size() - 1; line >= 0; line--) {
      String v = lines.get(line);
      int end = v.length();
      while (end >= 0) {
        int comma = v.lastIndexOf(',', end - 1);
        String hop = v.substring(comma + 1, end).trim();
        end = comma;
        if (hop.isEmpty()) {
          if (comma < 0) {
            break;
          }
          continue;
        }
        if (++hops > MAX_HOPS) {
          return null;
        }
        byte[] a = IpLiteral.parse(hop);
        if (a == null) {
          return null;
        }
        if (!proxies.contains(a)) {
          return IpLiteral.key(a);
        }
        leftmost = a;
        if (comma < 0) {
          break;
        }
      }
    }
    // Every hop is one of our proxies (or there were none): the request started inside the trusted zone.
    return IpLiteral.key(leftmost != null ? leftmost : peer);
  }

  /** Longest {@code Forwarded} header text examined; a longer one is not a deployment either. */
  static final int MAX_FORWARDED_CHARS = 4096;

  static String clientOfForwarded(RequestView r, TrustedProxies proxies) {
    byte[] peer = IpLiteral.parse(r.remoteAddress());
    if (peer == null) {
      return null;
    }
    if (!proxies.contains(peer)) {
      return IpLiteral.key(peer);
    }
    List<String> fors = new ArrayList<>();
    int chars = 0;
    for (String line : r.headers("Forwarded")) {
      if (line.isBlank()) {
        continue;
      }
      chars += line.length();
      if (chars > MAX_FORWARDED_CHARS || !forValues(line, fors)) {
        return null;
      }
    }
    if (fors.size() > MAX_HOPS) {
      return null;
    }
    byte[] leftmost = null;
    for (int i = fors.size() - 1; i >= 0; i--) {
      byte[] a = IpLiteral.parse(fors.get(i));
      if (a == null) {
        return null; // obfuscated (_hidden), "unknown", or garbage
      }
      if (!proxies.contains(a)) {
        return IpLiteral.key(a);
      }
      leftmost = a;
    }
    return IpLiteral.key(leftmost != null ? leftmost : peer);
  }

  /**
   * Appends the {@code for=} value of each element of one {@code Forwarded} line (an element without
   * one appends ""). Quoted strings may hold commas and semicolons. False when the line is malformed.
   */
  static boolean forValues(String line, List<String> out) {
    int i = 0;
    int n = line.length();
    String forValue = "";
    while (i <= n) {
      // one pair: token "=" (token / quoted-string), then ';' or ',' or end
      while (i < n && (line.charAt(i) == ' ' || line.charAt(i) == '\t')) {
        i++;
      }
      if (i == n) {
        out.add(forValue);
        return true;
      }
      int eq = line.indexOf('=', i);
      if (eq < 0) {
        return false;
      }
      String name = line.substring(i, eq).trim();
      i = eq + 1;
      String value;
      if (i < n && line.charAt(i) == '"') {
        StringBuilder b = new StringBuilder();
        i++;
        while (i < n && line.charAt(i) != '"') {
          char c = line.charAt(i);
          if (c == '\\' && i + 1 < n) {
            c = line.charAt(++i);
          }
          b.append(c);
          i++;
        }
        if (i >= n) {
          return false; // unterminated quoted string
        }
        i++;
        value = b.toString();
      } else {
        int end = i;
        while (end < n && line.charAt(end) != ';' && line.charAt(end) != ',') {
          end++;
        }
        value = line.substring(i, end).trim();
        i = end;
      }
      if (name.equalsIgnoreCase("for")) {
        forValue = value;
      }
      while (i < n && (line.charAt(i) == ' ' || line.charAt(i) == '\t')) {
        i++;
      }
      if (i == n) {
        out.add(forValue);
        return true;
      }
      char sep = line.charAt(i++);
      if (sep == ',') {
        out.add(forValue);
        forValue = "";
      } else if (sep != ';') {
        return false;
      }
    }
    return true;
  }
}
