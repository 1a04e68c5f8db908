package dev.sluice.server;

import dev.sluice.Decision;
import dev.sluice.Policy;
import org.eclipse.jetty.http.HttpFields;

/**
 * The rate-limit response headers, the same set the HTTP filters of {@code sluice-http} send (SPEC H):
 * {@code RateLimit-Policy: "name";q=limit;w=seconds} and {@code RateLimit: "name";r=remaining;t=seconds}
 * (the structured-field form of the IETF httpapi ratelimit-headers draft), the common
 * {@code X-RateLimit-Limit}, {@code X-RateLimit-Remaining}, {@code X-RateLimit-Reset} (epoch seconds),
 * and {@code Retry-After} (whole seconds, rounded up, at least 1) on a refusal.
 *
 * <p>A decision made by a failure mode (the store was down) carries none of them: an outage is not a
 * limit the client exceeded, and its numbers would be invented.
 *
 * <p>Written here because {@code sluice-http} had not landed on main with a public renderer when the
 * server was built; it renders the same bytes, and should be replaced by that renderer once public.
 */
final class RateLimitHeaders {
  private final String policyValue;
  private final String quoted;

  RateLimitHeaders(Policy policy) {
    this.quoted = "\"" + policy.name() + "\"";
    this.policyValue = quoted + ";q=" + policy.limit() + ";w=" + ceilSeconds(PolicyFile.quotaMicros(policy.algorithm()));
  }

  /** The value of {@code RateLimit-Policy}. */
  String policyValue() {
    return policyValue;
  }

  /** Adds the headers for {@code d}, decided at {@code nowMicros}; nothing for a failure-mode decision. */
  void apply(Decision d, long nowMicros, HttpFields.Mutable h, boolean withRetryAfter) {
    if (d.reason().isFailure()) {
      return;
    }
    long resetIn = Math.max(0, ceilSeconds(d.resetAtMicros() - nowMicros));
    h.put("RateLimit-Policy", policyValue);
    h.put("RateLimit", quoted + ";r=" + d.remaining() + ";t=" + resetIn);
    h.put("X-RateLimit-Limit", Long.toString(d.limit()));
    h.put("X-RateLimit-Remaining", Long.toString(d.remaining()));
    h.put("X-RateLimit-Reset", Long.toString(ceilSeconds(d.resetAtMicros())));
    if (withRetryAfter && !d.allowed()) {
      h.put("Retry-After", Long.toString(retryAfterSeconds(d)));
    }
  }

  /** Whole seconds, rounded up, at least 1. */
  static long retryAfterSeconds(Decision d) {
    return Math.max(1, ceilSeconds(d.retryAfterMicros()));
  }

  static long ceilSeconds(long micros) {
    return -Math.floorDiv(-micros, 1_000_000L);
  }
}
