package dev.sluice.server.envoy;

/** envoyproxy/ratelimit's wildcard values: each {@code *} matches any run of characters, empty included. */
final class Wildcard {
  private Wildcard() {}

  /** Whether {@code value} matches the pattern split on {@code *} ({@code parts}, at least two). */
  static boolean matches(String[] parts, String value) {
    String first = parts[0];
    String last = parts[parts.length - 1];
    if (!value.startsWith(first) || value.length() - first.length() < last.length() || !value.endsWith(last)) {
      return false;
    }
    int at = first.length();
    int end = value.length() - last.length();
    for (int i = 1; i < parts.length - 1; i++) {
      int found = value.indexOf(parts[i], at);
      if (found < 0 || found + parts[i].length() > end) {
        return false;
      }
      at = found + parts[i].length();
    }
    return true;
  }
}
