package dev.sluice.http;

import dev.sluice.Algorithm;
import dev.sluice.Decision;
import dev.sluice.Path;
import dev.sluice.Policy;
import java.util.function.BiConsumer;

/**
 * Renders every rate-limit header and problem body Sluice sends, in one place.
 *
 * <ul>
 *   <li>IETF (httpapi ratelimit-headers draft, structured fields):
 *       {@code RateLimit-Policy: "api";q=100;w=60} and {@code RateLimit: "api";r=50;t=30}. With a
 *       global ceiling both policies are listed, the client's first:
 *       {@code RateLimit-Policy: "api";q=100;w=60, "ceiling";q=5000;w=60}.
 *   <li>Common: {@code X-RateLimit-Limit}, {@code X-RateLimit-Remaining}, {@code X-RateLimit-Reset}
 *       (epoch seconds, rounded up), for the tighter of the policies (the one with fewer remaining).
 *   <li>Refused (429): {@code Retry-After} in whole seconds rounded up, at least 1, plus the families
 *       above for the policy that refused, and an RFC 9457 {@code application/problem+json} body
 *       naming the policy.
 *   <li>Store failure decided closed (503): {@code Retry-After} and a problem body; no limit
 *       headers, because an outage is not a limit the client exceeded.
 * </ul>
 *
 * <p>{@code q} is the policy's limit (a bucket's capacity, GCRA's burst); {@code w} is its window in
 * seconds (for a bucket: the time to refill from empty); {@code r} the permits remaining;
 * {@code t} the seconds until the window resets or the bucket is full again. Every second count is
 * rounded up, so a client that waits as told is never early. Decisions served by a failure mode
 * (no store answered) render no limit headers.
 */
public final class RateLimitHeaders {
  public static final String RATE_LIMIT_POLICY = "RateLimit-Policy";
  public static final String RATE_LIMIT = "RateLimit";
  public static final String X_LIMIT = "X-RateLimit-Limit";
  public static final String X_REMAINING = "X-RateLimit-Remaining";
  public static final String X_RESET = "X-RateLimit-Reset";
  public static final String RETRY_AFTER = "Retry-After";
  public static final String PROBLEM_JSON = "application/problem+json";

  private static final RateLimitHeaders ALL = new RateLimitHeaders(true, true);

  private final boolean ietf;
  private final boolean legacy;

  private RateLimitHeaders(boolean ietf, boolean legacy) {
    this.ietf = ietf;
    this.legacy = legacy;
  }

  /** Both families on. */
  public static RateLimitHeaders all() {
    return ALL;
  }

  /**
   * Chooses the families: {@code ietf} for {@code RateLimit-Policy} / {@code RateLimit},
   * {@code legacy} for {@code X-RateLimit-*}. {@code Retry-After} on refusals is always sent.
   */
  public static RateLimitHeaders of(boolean ietf, boolean legacy) {
    return ietf && legacy ? ALL : new RateLimitHeaders(ietf, legacy);
  }

  public boolean ietf() { return ietf; }

  public boolean legacy() { return legacy; }

  /**
   * Headers of an allowed request: {@code primary} is the client's decision, {@code ceiling} the
   * global ceiling's (or null).
   */
  public void allowed(Decision primary, Decision ceiling, long nowMicros, BiConsumer<String, String> out) {
    Decision a = rendered(primary);
    Decision b = rendered(ceiling);
    if (a == null) {
      a = b;
      b = null;
    }
    if (a == null) {
      return;
    }
    if (ietf) {
      out.accept(RATE_LIMIT_POLICY, b == null ? policyItem(a) : policyItem(a) + ", " + policyItem(b));
      out.accept(RATE_LIMIT, b == null ? limitItem(a, nowMicros) : limitItem(a, nowMicros) + ", " + limitItem(b, nowMicros));
    }
    if (legacy) {
      Decision tight = b != null && b.remaining() < a.remaining() ? b : a;
      legacy(tight, out);
    }
  }

  /** Headers of a refusal (429): {@code Retry-After} and the families for the refusing policy. */
  public void refused(Decision refused, long nowMicros, BiConsumer<String, String> out) {
    out.accept(RETRY_AFTER, Long.toString(retryAfterSeconds(refused)));
    if (refused.path() == Path.FAILURE_MODE) {
      return;
    }
    if (ietf) {
      out.accept(RATE_LIMIT_POLICY, policyItem(refused));
      out.accept(RATE_LIMIT, limitItem(refused, nowMicros));
    }
    if (legacy) {
      legacy(refused, out);
    }
  }

  /** Headers of a store failure decided closed (503): only {@code Retry-After}. */
  public void unavailable(Decision failed, BiConsumer<String, String> out) {
    out.accept(RETRY_AFTER, Long.toString(retryAfterSeconds(failed)));
  }

  private static Decision rendered(Decision d) {
    return d == null || d.path() == Path.FAILURE_MODE ? null : d;
  }

  private static void legacy(Decision d, BiConsumer<String, String> out) {
    out.accept(X_LIMIT, Long.toString(d.limit()));
    out.accept(X_REMAINING, Long.toString(d.remaining()));
    out.accept(X_RESET, Long.toString(ceilSeconds(d.resetAtMicros())));
  }

  /** {@code "api";q=100;w=60}. Policy names need no escaping: they are {@code [A-Za-z0-9._:-]}. */
  public static String policyItem(Decision d) {
    return "\"" + d.policy().name() + "\";q=" + d.limit() + ";w=" + windowSeconds(d.policy());
  }

  /** {@code "api";r=50;t=30}. */
  public static String limitItem(Decision d, long nowMicros) {
    return "\"" + d.policy().name() + "\";r=" + d.remaining() + ";t=" + Math.max(0, ceilSeconds(d.resetAtMicros() - nowMicros));
  }

  /** The retry-after of a refusal in whole seconds, rounded up, at least 1. */
  public static long retryAfterSeconds(Decision d) {
    return Math.max(1, ceilSeconds(d.retryAfterMicros()));
  }

  /** The policy's window in whole seconds, rounded up: a bucket's time to refill from empty. */
  public static long windowSeconds(Policy policy) {
    Algorithm alg = policy.algorithm();
    long micros;
    if (alg instanceof Algorithm.FixedWindow fw) {
      micros = fw.windowMicros();
    } else if (alg instanceof Algorithm.SlidingWindow sw) {
      micros = sw.windowMicros();
    } else if (alg instanceof Algorithm.SlidingLog sl) {
      micros = sl.windowMicros();
    } else if (alg instanceof Algorithm.TokenBucket tb) {
      // capacity * period <= 2^52 by validation, so this cannot overflow.
      micros = ceilDiv(tb.capacity() * tb.refillPeriodMicros(), tb.refillTokens());
    } else {
      Algorithm.Gcra g = (Algorithm.Gcra) alg;
      micros = ceilDiv(g.burst() * g.periodMicros(), g.rate());
    }
    return Math.max(1, ceilSeconds(micros));
  }

  /** The RFC 9457 body of a 429. */
  public static String tooManyRequestsBody(Decision refused) {
    long s = retryAfterSeconds(refused);
    String policy = refused.policy().name();
    return "{\"type\":\"about:blank\",\"title\":\"Too Many Requests\",\"status\":429,"
        + "\"detail\":\"Rate limit of policy '" + policy + "' exceeded; retry after " + s + (s == 1 ? " second." : " seconds.")
        + "\",\"policy\":\"" + policy + "\",\"reason\":\"" + refused.reason().name() + "\",\"retryAfter\":" + s + "}";
  }

  /** The RFC 9457 body of a 503 (the limiter could not decide and failed closed). */
  public static String unavailableBody(Decision failed) {
    String policy = failed.policy().name();
    return "{\"type\":\"about:blank\",\"title\":\"Service Unavailable\",\"status\":503,"
        + "\"detail\":\"The rate limiter for policy '" + policy + "' could not decide (" + failed.reason().name()
        + "); this is not a limit you exceeded.\",\"policy\":\"" + policy + "\",\"reason\":\"" + failed.reason().name() + "\"}";
  }

  private static long ceilSeconds(long micros) {
    return Math.floorDiv(micros + 999_999L, 1_000_000L);
  }

  private static long ceilDiv(long a, long b) {
    return Math.floorDiv(a + b - 1, b);
  }

  @Override public String toString() {
    return "RateLimitHeaders[ietf=" + ietf + ", legacy=" + legacy + "]";
  }
}
