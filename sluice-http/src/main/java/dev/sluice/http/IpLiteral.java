package dev.sluice.http;

import dev.sluice.kernel.Keys;
import java.net.InetAddress;
import java.net.UnknownHostException;

/**
 * Parses IP literals without ever touching DNS. Header values are attacker-controlled: a resolver
 * that called {@code InetAddress.getByName} on one would let a client make the server resolve
 * arbitrary names.
 */
final class IpLiteral {
  private IpLiteral() {}

  /** The address bytes (4 or 16) of {@code s}, or null when it is not an IP literal. Accepts {@code [v6]}, {@code [v6]:port} and {@code v4:port}. */
  static byte[] parse(String s) {
    if (s == null) {
      return null;
    }
    s = s.trim();
    if (s.isEmpty() || s.length() > 64) {
      return null;
    }
    if (s.charAt(0) == '[') {
      int close = s.indexOf(']');
      if (close < 0 || (close != s.length() - 1 && !isPort(s, close + 1))) {
        return null;
      }
      return parseV6(s.substring(1, close));
    }
    int colon = s.indexOf(':');
    if (colon < 0) {
      return parseV4(s);
    }
    if (s.indexOf('.') >= 0 && s.indexOf(':', colon + 1) < 0) {
      // a.b.c.d:port
      return isPort(s, colon) ? parseV4(s.substring(0, colon)) : null;
    }
    return parseV6(s);
  }

  private static boolean isPort(String s, int colon) {
    if (s.charAt(colon) != ':' || colon + 1 >= s.length() || s.length() - colon - 1 > 5) {
      return false;
    }
    for (int i = colon + 1; i < s.length(); i++) {
      if (s.charAt(i) < '0' || s.charAt(i) > '9') {
        return false;
      }
    }
    return true;
  }

  static byte[] parseV4(String s) {
    byte[] out = new byte[4];
    int part = 0;
    int value = -1;
    int digits = 0;
    for (int i = 0, n = s.length(); i <= n; i++) {
      char c = i < n ? s.charAt(i) : '.';
      if (c == '.') {
        if (digits == 0 || part > 3) {
          return null;
        }
        out[part++] = (byte) value;
        value = -1;
        digits = 0;
      } else if (c >= '0' && c <= '9') {
        if (digits == 3 || (digits > 0 && value == 0)) {
          return null; // too long, or a leading zero (octal ambiguity)
        }
        value = (value < 0 ? 0 : value * 10) + (c - '0');
        digits++;
        if (value > 255) {
          return null;
        }
      } else {
        return null;
      }
    }
    return part == 4 ? out : null;
  }

  private static byte[] parseV6(String s) {
    int zone = s.indexOf('%');
    if (zone >= 0) {
      s = s.substring(0, zone); // a zone id (fe80::1%eth0) is local to the host, not part of the identity
    }
    if (s.isEmpty() || s.indexOf(':') < 0) {
      return null;
    }
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      boolean ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.';
      if (!ok) {
        return null;
      }
    }
    try {
      // Brackets make the JDK treat it strictly as an IPv6 literal: it throws instead of asking DNS.
      return InetAddress.getByName("[" + s + "]").getAddress();
    } catch (UnknownHostException | RuntimeException e) {
      return null;
    }
  }

  /** The key of a client at {@code address}: {@code ip:203.0.113.7}; null for none. */
  static String key(byte[] address) {
    return address == null ? null : Keys.key(Keys.IP, format(address));
  }

  /**
   * The canonical text of an address: a dotted quad (an IPv4-mapped IPv6 address too, so one client
   * has one key over either family), or the RFC 5952 form of IPv6: lower-case hex without leading
   * zeros, the longest run of two or more zero groups (the first of equals) as {@code ::}
   * ({@code 2001:db8::1}, not the JDK's {@code 2001:db8:0:0:0:0:0:1}).
   */
  static String format(byte[] a) {
    if (a.length == 4) {
      return (a[0] & 0xff) + "." + (a[1] & 0xff) + "." + (a[2] & 0xff) + "." + (a[3] & 0xff);
    }
    if (isV4Mapped(a)) {
      return format(java.util.Arrays.copyOfRange(a, 12, 16));
    }
    int[] g = new int[8];
    for (int i = 0; i < 8; i++) {
      g[i] = (a[2 * i] & 0xff) << 8 | a[2 * i + 1] & 0xff;
    }
    int bestStart = -1;
    int bestLength = 1; // a single zero group is never compressed
    for (int i = 0; i < 8; ) {
      int j = i;
      while (j < 8 && g[j] == 0) {
        j++;
      }
      if (j - i > bestLength) {
        bestStart = i;
        bestLength = j - i;
      }
      i = j == i ? i + 1 : j;
    }
    StringBuilder b = new StringBuilder(39);
    for (int i = 0; i < 8; i++) {
      if (i == bestStart) {
        b.append("::");
        i += bestLength - 1;
        continue;
      }
      if (b.length() > 0 && b.charAt(b.length() - 1) != ':') {
        b.append(':');
      }
      b.append(Integer.toHexString(g[i]));
    }
    return b.toString();
  }

  private static boolean isV4Mapped(byte[] a) {
    for (int i = 0; i < 10; i++) {
      if (a[i] != 0) {
        return false;
      }
    }
    return a[10] == (byte) 0xff && a[11] == (byte) 0xff;
  }
}
