package dev.sluice.kernel;

import java.util.Collection;
import java.util.Locale;

/**
 * Which rate-limit header families a front end sends: the IETF draft's {@code RateLimit-Policy} and
 * {@code RateLimit}, the common {@code X-RateLimit-*}, both, or neither. One word set for every front
 * end ({@code sluice serve --envoy-headers}, the Spring starter's {@code sluice.http.rules[].headers}):
 * {@code ietf}, {@code legacy}, {@code all}, {@code none}, in any case. A list of them means their
 * union ({@code [ietf, legacy]} is {@code all}).
 */
public enum HeaderFamily {
  /** {@code RateLimit-Policy} and {@code RateLimit}. */
  IETF(true, false),
  /** {@code X-RateLimit-Limit}, {@code X-RateLimit-Remaining}, {@code X-RateLimit-Reset}. */
  LEGACY(false, true),
  /** Both families. */
  ALL(true, true),
  /** No limit headers ({@code Retry-After} on a refusal is not a family: it is always sent). */
  NONE(false, false);

  private final boolean ietf;
  private final boolean legacy;

  HeaderFamily(boolean ietf, boolean legacy) {
    this.ietf = ietf;
    this.legacy = legacy;
  }

  /** Whether this sends the IETF draft's fields. */
  public boolean ietf() {
    return ietf;
  }

  /** Whether this sends {@code X-RateLimit-*}. */
  public boolean legacy() {
    return legacy;
  }

  /** The word configuration writes: {@code ietf}, {@code legacy}, {@code all}, {@code none}. */
  public String word() {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * The family {@code word} names, in any case; {@code setting} names where it came from in the
   * message of a word that is none of them.
   */
  public static HeaderFamily parse(String setting, String word) {
    String w = word == null ? "" : word.trim().toUpperCase(Locale.ROOT);
    for (HeaderFamily f : values()) {
      if (f.name().equals(w)) {
        return f;
      }
    }
    throw new IllegalArgumentException(setting + " " + (word == null ? "is not set" : "'" + word + "' is unknown")
        + "; use ietf, legacy, all or none");
  }

  /** The union of {@code families}: what a list of them sends ({@link #NONE} for an empty list). */
  public static HeaderFamily union(Collection<HeaderFamily> families) {
    boolean i = false;
    boolean l = false;
    for (HeaderFamily f : families) {
      i |= f.ietf;
      l |= f.legacy;
    }
    return i ? (l ? ALL : IETF) : (l ? LEGACY : NONE);
  }
}
