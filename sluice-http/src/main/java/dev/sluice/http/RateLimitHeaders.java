package dev.sluice.http;

import dev.sluice.Decision;
import dev.sluice.Path;
import dev.sluice.Policy;
import java.util.function.BiConsumer;

/**
 * The rate-limit header families and how each is rendered; which of them a response carries, and
 * when, is decided by {@link HttpVerdict}.
 *
 * <ul>
 *   <li>IETF (httpapi ratelimit-headers draft, structured fields):
 *       {@code RateLimit-Policy: "api";q=100;w=60} and {@code RateLimit: "api";r=50;t=30}. With a
 *       global ceiling both policies are listed, the client's first:
 *       {@code RateLimit-Policy: "api";q=100;w=60, "ceiling";q=5000;w=60}.
 *   <li>Common: {@code X-RateLimit-Limit}, {@code X-RateLimit-Remaining}, {@code X-RateLimit-Reset}
 *       (epoch seconds, rounded up), for the tighter of the policies (the one with fewer remaining).
 *   <li>{@code Retry-After} on every refusal, whichever families are on.
 * </ul>
 *
 * <p>{@code q} is the policy's limit (a bucket's capacity, GCRA's burst); {@code w} is its window in
 * seconds (for a bucket: the time to refill from empty); {@code r} the permits remaining;
 * {@code t} the seconds until the window resets or the bucket is full again on an allowed answer,
 * and on a refusal the seconds until the refused request fits again, which is its
 * {@code Retry-After} (and {@code X-RateLimit-Reset} that instant): for a refilling algorithm (token
 * bucket, GCRA) a refusal's "full again" lies well past the moment the next permits come back, and
 * {@code r=0;t=4} beside {@code Retry-After: 1} would contradict itself. Every second count is
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

  private static final RateLimitHeaders ALL = new RateLimitHeaders(true, true, false);

  private final boolean ietf;
  private final boolean legacy;
  private final boolean partitionKeys;

  private RateLimitHeaders(boolean ietf, boolean legacy, boolean partitionKeys) {
    this.ietf = ietf;
    this.legacy = legacy;
    this.partitionKeys = partitionKeys;
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
    return ietf && legacy ? ALL : new RateLimitHeaders(ietf, legacy, false);
  }

  /**
   * These families with the draft's partition key on the client's policy items:
   * {@code "api";q=100;w=60;pk=:MTIz...:}, a byte sequence that tells one client's partition from
   * another's. It is 16 bytes of the key's stored id (SHA-256 of the policy name and the key), never
   * the key itself, which is often personal data or a credential. Off unless asked for.
   */
  public RateLimitHeaders withPartitionKeys() {
    return new RateLimitHeaders(ietf, legacy, true);
  }

  public boolean partitionKeys() { return partitionKeys; }

  /** {@code ;pk=:BASE64:} for {@code key} under {@code d}'s policy, or nothing. */
  private String pk(Decision d, String key) {
    if (!partitionKeys || key == null) {
      return "";
    }
    byte[] id = java.util.HexFormat.of().parseHex(dev.sluice.kernel.Inputs.storedId(d.policy().name(), key).substring(0, 32));
    return ";pk=:" + java.util.Base64.getEncoder().encodeToString(id) + ":";
  }

  public boolean ietf() { return ietf; }

  public boolean legacy() { return legacy; }

  /**
   * Headers of an allowed request: {@code primary} is the client's decision, {@code ceiling} the
   * global ceiling's (or null).
   */
  public void allowed(Decision primary, Decision ceiling, long nowMicros, BiConsumer<String, String> out) {
    allowed(primary, ceiling, null, nowMicros, out);
  }

  /** {@link #allowed(Decision, Decision, long, BiConsumer)} for the client's {@code key} (its partition key, when on). */
  public void allowed(Decision primary, Decision ceiling, String key, long nowMicros, BiConsumer<String, String> out) {
    Decision a = rendered(primary);
    String pk = a != null ? pk(a, key) : "";
    Decision b = rendered(ceiling);
    if (a == null) {
      a = b;
      b = null;
    }
    if (a == null) {
      return;
    }
    if (ietf) {
      String policy = policyItem(a) + pk;
      String limit = limitItem(a, nowMicros) + pk;
      out.accept(RATE_LIMIT_POLICY, b == null ? policy : policy + ", " + policyItem(b));
      out.accept(RATE_LIMIT, b == null ? limit : limit + ", " + limitItem(b, nowMicros));
    }
    if (legacy) {
      Decision tight = b != null && b.remaining() < a.remaining() ? b : a;
      legacy(tight, tight.resetAtMicros(), out);
    }
  }

  /**
   * The limit headers of a refusal (the families switched on), reporting {@code resumesAtMicros}, the
   * instant the refused request fits again, as the reset ({@code t}, {@code X-RateLimit-Reset}); the
   * caller ({@link HttpVerdict}) decides whether a response carries them.
   */
  void refused(Decision d, String key, long resumesAtMicros, long nowMicros, BiConsumer<String, String> out) {
    if (ietf) {
      String pk = pk(d, key);
      out.accept(RATE_LIMIT_POLICY, policyItem(d) + pk);
      out.accept(RATE_LIMIT, limitItem(d, resumesAtMicros, nowMicros) + pk);
    }
    if (legacy) {
      legacy(d, resumesAtMicros, out);
    }
  }

  private static Decision rendered(Decision d) {
    return d == null || d.path() == Path.FAILURE_MODE ? null : d;
  }

  private static void legacy(Decision d, long resetAtMicros, BiConsumer<String, String> out) {
    out.accept(X_LIMIT, Long.toString(d.limit()));
    out.accept(X_REMAINING, Long.toString(d.remaining()));
    out.accept(X_RESET, Long.toString(ceilSeconds(resetAtMicros)));
  }

  /** {@code "api";q=100;w=60}. Policy names need no escaping: they are {@code [A-Za-z0-9._:-]}. */
  static String policyItem(Decision d) {
    return "\"" + d.policy().name() + "\";q=" + d.limit() + ";w=" + windowSeconds(d.policy());
  }

  /** {@code "api";r=50;t=30}. */
  public static String limitItem(Decision d, long nowMicros) {
    return limitItem(d, d.resetAtMicros(), nowMicros);
  }

  private static String limitItem(Decision d, long resetAtMicros, long nowMicros) {
    return "\"" + d.policy().name() + "\";r=" + d.remaining() + ";t=" + Math.max(0, ceilSeconds(resetAtMicros - nowMicros));
  }

  /**
   * The policy's window in whole seconds, rounded up, at least 1: the span its quota covers
   * ({@link dev.sluice.Algorithm#quotaMicros}), a bucket's time to refill from empty.
   */
  public static long windowSeconds(Policy policy) {
    return Math.max(1, ceilSeconds(policy.algorithm().quotaMicros()));
  }

  private static long ceilSeconds(long micros) {
    return ceilDiv(micros, 1_000_000L);
  }

  /** {@code a / b} rounded up ({@code b > 0}): every count of time a client is told is rounded up, so it is never early. */
  static long ceilDiv(long a, long b) {
    return Math.floorDiv(a + b - 1, b);
  }

  @Override public String toString() {
    return "RateLimitHeaders[ietf=" + ietf + ", legacy=" + legacy + (partitionKeys ? ", partitionKeys" : "") + "]";
  }
}
