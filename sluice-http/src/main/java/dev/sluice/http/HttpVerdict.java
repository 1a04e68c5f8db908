package dev.sluice.http;

import dev.sluice.Decision;
import dev.sluice.Path;
import dev.sluice.Reason;
import dev.sluice.guard.RateLimitExceededException;
import dev.sluice.kernel.Inputs;
import dev.sluice.kernel.DecisionWords;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What a client is told about a {@link Decision}: status, headers and, for a refusal, an RFC 9457
 * problem body. The one place that decides it; the servlet filter, the JDK filter, the service
 * ({@code sluice serve}), the MCP adapter and a web app rendering the guard's
 * {@link RateLimitExceededException} all answer through it. Immutable.
 *
 * <table>
 *   <caption>Status per decision</caption>
 *   <tr><th>decision</th><th>status</th><th>headers</th><th>limit fields in the body</th></tr>
 *   <tr><td>allowed</td><td>200 (the request proceeds)</td><td>limit headers</td><td>yes</td></tr>
 *   <tr><td>refused: {@code LIMIT_EXCEEDED}, {@code KEY_TABLE_FULL}, {@code CONTENTION}</td><td>429</td>
 *       <td>{@code Retry-After} and limit headers</td><td>yes</td></tr>
 *   <tr><td>refused: {@code STORE_UNAVAILABLE}, {@code TIMEOUT}, {@code CORRUPT_STATE}, {@code INVALID_CLOCK}</td>
 *       <td>503</td><td>{@code Retry-After} only</td><td>no</td></tr>
 * </table>
 *
 * <p>{@code CONTENTION} is load, not an outage: compare-and-set retries run out on a key hammered hard
 * enough, which is the flood a rate limit exists for, so it is a 429 that tells the client when to
 * come back. A 503 carries no limit headers and no limit fields: an outage is not a limit the client
 * exceeded. A decision served by a failure mode ({@link Path#FAILURE_MODE}: no store answered) has
 * no limits to report either, whatever its status.
 *
 * <p>Every JSON rendering of a decision has these fields, in this order: {@code allowed},
 * {@code reason} and {@code path} in lower case ({@code limit_exceeded}, {@code failure_mode};
 * {@code path} only when not {@code primary}), {@code policy}, then where there are limits to report
 * {@code limit}, {@code remaining} and {@code resetAt} (ISO-8601), then {@code retryAfterSeconds}
 * (the {@code Retry-After} value: whole seconds rounded up, at least 1) and {@code retryAfterMillis}
 * (milliseconds rounded up, at least 1); both are 0 when allowed. A client that waits as told is never
 * early.
 */
public final class HttpVerdict {
  /** The request may proceed. */
  public static final int OK = 200;
  /** Refused: the client is over a limit (or contending on a hot key). */
  public static final int TOO_MANY_REQUESTS = 429;
  /** Refused: the limiter could not decide and failed closed. */
  public static final int SERVICE_UNAVAILABLE = 503;
  /** The media type of {@link #body()}. */
  public static final String PROBLEM_JSON = "application/problem+json";

  /** One response header. */
  public record Header(String name, String value) {}

  private final int status;
  private final List<Header> headers;
  private final Map<String, Object> fields;
  private final Map<String, Object> problem;
  private final String body;

  private HttpVerdict(int status, List<Header> headers, Map<String, Object> fields, Map<String, Object> problem) {
    this.status = status;
    this.headers = Collections.unmodifiableList(headers);
    this.fields = Collections.unmodifiableMap(fields);
    this.problem = Collections.unmodifiableMap(problem);
    this.body = problem.isEmpty() ? null : json(problem);
  }

  /** The verdict on {@code decision}; {@code nowMicros} is the limiter's clock (for {@code RateLimit}'s {@code t}). */
  public static HttpVerdict of(Decision decision, long nowMicros, RateLimitHeaders families) {
    return of(decision, null, nowMicros, families);
  }

  /**
   * The verdict on a request checked against the client's policy ({@code primary}) and then a global
   * ceiling ({@code ceiling}, null when there is none or it was not asked). The first refusal
   * decides; when both allowed, the headers list both policies and the fields are the client's.
   */
  public static HttpVerdict of(Decision primary, Decision ceiling, long nowMicros, RateLimitHeaders families) {
    return of(primary, ceiling, null, nowMicros, families);
  }

  /**
   * {@link #of(Decision, Decision, long, RateLimitHeaders)} for the client's {@code key}, which the
   * headers name as the draft's partition key when {@link RateLimitHeaders#withPartitionKeys()} is on
   * (and ignore otherwise; null for none).
   */
  public static HttpVerdict of(Decision primary, Decision ceiling, String key, long nowMicros, RateLimitHeaders families) {
    Inputs.notNull("decision", primary);
    Inputs.notNull("headers", families);
    Decision decisive = !primary.allowed() || ceiling == null || ceiling.allowed() ? primary : ceiling;
    int status = status(decisive);
    List<Header> headers = new ArrayList<>(6);
    if (status == OK) {
      families.allowed(primary, ceiling, key, nowMicros, (n, v) -> headers.add(new Header(n, v)));
    } else {
      headers.add(new Header(RateLimitHeaders.RETRY_AFTER, Long.toString(retryAfterSeconds(decisive))));
      if (hasLimits(decisive)) {
        // t and X-RateLimit-Reset say when the refused request fits again: exactly Retry-After.
        long resumesAt = nowMicros + retryAfterSeconds(decisive) * 1_000_000L;
        families.refused(decisive, decisive == primary ? key : null, resumesAt, nowMicros, (n, v) -> headers.add(new Header(n, v)));
      }
    }
    Map<String, Object> fields = fields(decisive);
    Map<String, Object> problem = new LinkedHashMap<>();
    if (status != OK) {
      problem.put("type", "about:blank");
      problem.put("title", status == TOO_MANY_REQUESTS ? "Too Many Requests" : "Service Unavailable");
      problem.put("status", status);
      problem.put("detail", detail(decisive));
      problem.putAll(fields);
    }
    return new HttpVerdict(status, headers, fields, problem);
  }

  /**
   * The verdict on the guard's refusal, so that a web application that catches it answers what the
   * filters answer: {@code catch (RateLimitExceededException e) { HttpVerdict v = HttpVerdict.of(e, ...); }}.
   */
  public static HttpVerdict of(RateLimitExceededException refusal, long nowMicros, RateLimitHeaders families) {
    Inputs.notNull("refusal", refusal);
    if (refusal.decision() == null) {
      throw new IllegalArgumentException("the RateLimitExceededException of policy '" + refusal.policyName()
          + "' carries no decision (it was deserialized); render the exception where the guard threw it");
    }
    return of(refusal.decision(), null, nowMicros, families);
  }

  /** 200 when allowed; 503 for a refusal the limiter could not decide (an outage); 429 for every other refusal. */
  public static int status(Decision d) {
    if (d.allowed()) {
      return OK;
    }
    return isOutage(d.reason()) ? SERVICE_UNAVAILABLE : TOO_MANY_REQUESTS;
  }

  /** True for the reasons that are the limiter's trouble, not the client's load: every failure but contention. */
  static boolean isOutage(Reason reason) {
    return reason.isFailure() && reason != Reason.CONTENTION;
  }

  /** The {@code Retry-After} of a refusal: whole seconds, rounded up, at least 1; 0 when allowed. */
  public static long retryAfterSeconds(Decision d) {
    return d.allowed() ? 0 : Math.max(1, RateLimitHeaders.ceilDiv(d.retryAfterMicros(), 1_000_000L));
  }

  /** The retry-after of a refusal in milliseconds, rounded up, at least 1; 0 when allowed. */
  public static long retryAfterMillis(Decision d) {
    return d.allowed() ? 0 : Math.max(1, RateLimitHeaders.ceilDiv(d.retryAfterMicros(), 1_000L));
  }

  private static boolean hasLimits(Decision d) {
    return d.path() != Path.FAILURE_MODE && status(d) != SERVICE_UNAVAILABLE;
  }

  private static Map<String, Object> fields(Decision d) {
    Map<String, Object> f = new LinkedHashMap<>();
    f.put("allowed", d.allowed());
    f.put("reason", DecisionWords.of(d.reason()));
    if (d.path() != Path.PRIMARY) {
      f.put("path", DecisionWords.of(d.path()));
    }
    f.put("policy", d.policy().name());
    if (hasLimits(d)) {
      f.put("limit", d.limit());
      f.put("remaining", d.remaining());
      long m = d.resetAtMicros();
      f.put("resetAt", Instant.ofEpochSecond(Math.floorDiv(m, 1_000_000L), Math.floorMod(m, 1_000_000L) * 1_000L).toString());
    }
    f.put("retryAfterSeconds", retryAfterSeconds(d));
    f.put("retryAfterMillis", retryAfterMillis(d));
    return f;
  }

  private static String detail(Decision d) {
    String policy = d.policy().name();
    long s = retryAfterSeconds(d);
    String wait = s + (s == 1 ? " second." : " seconds.");
    if (isOutage(d.reason())) {
      return "The rate limiter for policy '" + policy + "' could not decide (" + DecisionWords.of(d.reason())
          + "); this is not a limit you exceeded. Retry after " + wait;
    }
    return switch (d.reason()) {
      case KEY_TABLE_FULL -> "The rate limiter for policy '" + policy + "' is tracking as many clients as it can hold; retry after " + wait;
      case CONTENTION -> "Too many concurrent requests for one key under policy '" + policy + "'; retry after " + wait;
      default -> "Rate limit of policy '" + policy + "' exceeded; retry after " + wait;
    };
  }

  /** 200, 429 or 503. */
  public int status() { return status; }

  /** True when the request may proceed (status 200). */
  public boolean allowed() { return status == OK; }

  /** The headers to set, in order: {@code Retry-After} first on a refusal, then the limit headers. */
  public List<Header> headers() { return headers; }

  /** The decision's fields (see the class comment), for a JSON body of one's own (the service adds its ticket). */
  public Map<String, Object> fields() { return fields; }

  /**
   * The RFC 9457 problem of a refusal: {@code type}, {@code title}, {@code status}, {@code detail},
   * then {@link #fields()}. Empty when allowed.
   */
  public Map<String, Object> problem() { return problem; }

  /** {@link #problem()} as {@code application/problem+json} text; null when allowed. */
  public String body() { return body; }

  /** {@link #body()} in UTF-8; null when allowed. */
  public byte[] bodyBytes() { return body == null ? null : body.getBytes(StandardCharsets.UTF_8); }

  /** The refusal's human-readable explanation (the problem's {@code detail}); null when allowed. */
  public String detail() { return (String) problem.get("detail"); }

  /** A flat JSON object of strings, numbers and booleans. */
  static String json(Map<String, Object> members) {
    StringBuilder b = new StringBuilder(256).append('{');
    for (Map.Entry<String, Object> e : members.entrySet()) {
      if (b.length() > 1) {
        b.append(',');
      }
      string(b, e.getKey()).append(':');
      Object v = e.getValue();
      if (v instanceof String s) {
        string(b, s);
      } else {
        b.append(v);
      }
    }
    return b.append('}').toString();
  }

  private static StringBuilder string(StringBuilder b, String s) {
    b.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') {
        b.append('\\').append(c);
      } else if (c < 0x20) {
        b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.append('"');
  }

  /** Equal when status, headers and body fields are. */
  @Override public boolean equals(Object o) {
    return o instanceof HttpVerdict v && status == v.status && headers.equals(v.headers) && fields.equals(v.fields)
        && problem.equals(v.problem);
  }

  @Override public int hashCode() {
    return status * 31 + fields.hashCode();
  }

  @Override public String toString() {
    return "HttpVerdict[" + status + ", " + headers + ", " + (body != null ? body : fields) + "]";
  }
}
