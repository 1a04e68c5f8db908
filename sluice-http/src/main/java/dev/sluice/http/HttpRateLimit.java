package dev.sluice.http;

import dev.sluice.ClockedRateLimiter;
import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.PolicyResolver;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Ticker;
import dev.sluice.kernel.Inputs;
import dev.sluice.kernel.Keys;
import dev.sluice.kernel.RefundRule;
import dev.sluice.memory.CeilingRateLimiter;

/**
 * What an HTTP filter checks and how it answers; shared by {@link RateLimitServletFilter} and
 * {@link RateLimitHttpFilter}. Immutable and thread-safe once built.
 *
 * <pre>{@code
 * HttpRateLimit rateLimit = HttpRateLimit.builder(limiter)
 *     .keyResolver(KeyResolver.forwardedFor(TrustedProxies.of("10.0.0.0/8")))
 *     .globalCeiling(Policy.tokenBucket("api-ceiling", 5_000, 5_000, Duration.ofMinutes(1)))
 *     .build();
 * servletContext.addFilter("rate-limit", new RateLimitServletFilter(rateLimit));
 * }</pre>
 *
 * <p><b>Per request.</b> The key resolver names the client ({@link KeyResolver#UNKNOWN} when it
 * cannot); the client's budget is charged; if allowed and a global ceiling is configured, the
 * ceiling's one shared key is charged too, and if the ceiling refuses the client's permit is
 * refunded, so no partial charge is left behind. The ceiling is a {@link CeilingRateLimiter} (the
 * one implementation of the idea), so in a memory tier its key is pinned and a spray of client
 * addresses can never crowd it out. The answer is the {@link HttpVerdict} of those decisions: a
 * refusal answers 429 with {@code Retry-After} (also for {@link Reason#CONTENTION}: a hot key is
 * load, not an outage); a refusal the limiter could not decide answers 503 with no limit headers;
 * otherwise the limit headers are set and the request proceeds. After the handler,
 * {@code skipFailedRequests} refunds when it threw or answered 5xx, {@code skipSuccessfulRequests}
 * when it answered below 400.
 *
 * <p><b>Cost.</b> With {@link Builder#cost(long, String)} a request reserves an estimate instead of
 * one permit (LLM tokens, bytes), and after the handler its ticket is settled at the actual cost
 * the handler reported in a request attribute or response header of the configured name (say
 * {@code X-Usage-Tokens}): the unused part goes back, an overrun is charged into debt
 * ({@link RateLimiter#settle}). A handler that reports nothing leaves the estimate charged; one
 * that reports a value that is not a whole number from 0 to the policy's limit is logged, and the
 * estimate stays charged. A refund under the skip options takes precedence.
 */
public final class HttpRateLimit {
  /** The key charged on the global ceiling for every request, whoever sent it. */
  public static final String GLOBAL_KEY = "global";

  /** Keys longer than this (a long API key, a JWT) are replaced by their SHA-256, so they fit any backend's key cap. */
  static final int MAX_RAW_KEY = 128;

  final RateLimiter limiter;
  final Policy policy;
  final KeyResolver keyResolver;
  final RateLimiter ceilingLimiter;
  final Policy ceilingPolicy;
  /** The client's budget and the ceiling, charged together; null without a ceiling. */
  final CeilingRateLimiter ceiling;
  final RateLimitHeaders headers;
  final RefundRule refundRule;
  final Ticker ticker;
  /** Permits a request reserves: 1, or the estimate of {@link Builder#cost}. */
  final long reserve;
  /** The request attribute or response header the actual cost is read from; null without {@link Builder#cost}. */
  final String usage;
  /** Chooses each request's policy; null: {@link #policy} for every request. */
  final PolicyResolver<? super RequestView> resolver;

  private HttpRateLimit(Builder b) {
    this.limiter = b.limiter;
    this.policy = b.policy != null ? b.policy : b.limiter.policy();
    this.keyResolver = b.keyResolver;
    this.ceilingLimiter = b.ceilingLimiter;
    this.ceilingPolicy = b.ceilingPolicy;
    this.ceiling = b.ceiling;
    this.headers = b.headers;
    this.refundRule = RefundRule.of(b.skipFailed, b.skipSuccessful, "skipFailedRequests and skipSuccessfulRequests are both set; "
        + "then only 4xx answers would count: choose one");
    this.ticker = b.ticker;
    this.reserve = b.reserve;
    this.usage = b.usage;
    this.resolver = b.resolver;
  }

  /**
   * The policy {@code request} is checked under: the resolver's answer, or {@link #policy()}. An
   * answer that cannot grant the permits a request reserves would refuse it as a programming error:
   * the resolver's unresolved policy decides it instead (never an exception from a decision).
   */
  Policy policyOf(RequestView request) {
    if (resolver == null) {
      return policy;
    }
    Policy p = resolver.resolve(request);
    return reserve <= p.algorithm().limit() ? p : resolver.whenUnresolved();
  }

  public static Builder builder(RateLimiter limiter) {
    return new Builder(Inputs.notNull("limiter", limiter));
  }

  public Policy policy() { return policy; }

  /** The limiter clients are charged on. */
  public RateLimiter limiter() { return limiter; }

  /** The clock verdicts are rendered against (the {@code RateLimit} header's {@code t}). */
  public Ticker ticker() { return ticker; }

  public KeyResolver keyResolver() { return keyResolver; }

  public RateLimitHeaders headers() { return headers; }

  public boolean skipFailedRequests() { return refundRule == RefundRule.ON_FAILURE; }

  public boolean skipSuccessfulRequests() { return refundRule == RefundRule.ON_SUCCESS; }

  /** The request attribute or response header a request's actual cost is settled from, or null. */
  public String usageName() { return usage; }

  /** The key a request is charged under: the resolver's, {@link KeyResolver#UNKNOWN} when it has none. */
  public String keyOf(RequestView request) {
    return normalize(keyResolver.resolve(request));
  }

  /**
   * Whether a request's permits are given back once its handler finished: it threw ({@code threw})
   * or answered {@code status} (negative when unknown). True under {@code skipFailedRequests} when it
   * threw or answered 5xx, under {@code skipSuccessfulRequests} when it answered below 400: the
   * kernel's {@link RefundRule}, the one rule of every front end.
   */
  public boolean refunds(boolean threw, int status) {
    return refundRule.refunds(threw, status);
  }

  /**
   * A key as every backend can store it: a null or blank key is {@link KeyResolver#UNKNOWN}; one
   * longer than 128 characters (a long API key, a JWT) or not well-formed Unicode is replaced by its
   * SHA-256, so that no caller-controlled key is refused by a backend's key rules.
   */
  public static String normalize(String key) {
    if (key == null || key.isBlank()) {
      return KeyResolver.UNKNOWN;
    }
    if (key.length() > MAX_RAW_KEY || Inputs.unpairedSurrogate(key) >= 0) {
      return Keys.hashed(key);
    }
    return key;
  }

  /** Decides a request: charges the client's key, then the ceiling. */
  Admission admit(RequestView request) {
    String key = keyOf(request);
    Policy p = policyOf(request);
    Decision primary;
    Decision global = null;
    if (ceiling == null) {
      primary = limiter.tryAcquire(key, reserve, p);
    } else {
      CeilingRateLimiter.Charge c = ceiling.charge(key, reserve, p); // a ceiling refusal refunds the client
      primary = c.identity();
      global = c.ceiling();
    }
    return new Admission(this, HttpVerdict.of(primary, global, key, ticker.nowMicros(), headers), primary, global);
  }

  /** Builds an {@link HttpRateLimit}. */
  public static final class Builder {
    private final RateLimiter limiter;
    private Policy policy;
    private KeyResolver keyResolver = KeyResolver.clientAddress();
    private RateLimiter ceilingLimiter;
    private Policy ceilingPolicy;
    private CeilingRateLimiter ceiling;
    private RateLimitHeaders headers = RateLimitHeaders.all();
    private boolean skipFailed;
    private boolean skipSuccessful;
    private Ticker ticker;
    private long reserve = 1;
    private String usage;
    private PolicyResolver<? super RequestView> resolver;

    private Builder(RateLimiter limiter) {
      this.limiter = limiter;
    }

    /** Checks clients under {@code policy} instead of the limiter's default policy. */
    public Builder policy(Policy policy) {
      this.policy = Inputs.notNull("policy", policy);
      return this;
    }

    /**
     * Checks each request under the policy {@code resolver} chooses from it (a plan from a header, a
     * claim, the tenant's record: {@code docs/tenants.md}); a request it does not resolve is checked
     * under its {@link PolicyResolver#whenUnresolved() unresolved policy}, never let through unlimited.
     */
    public Builder policy(PolicyResolver<? super RequestView> resolver) {
      this.resolver = Inputs.notNull("resolver", resolver);
      return this;
    }

    /** Who a request counts against. Default: {@link KeyResolver#clientAddress()}. */
    public Builder keyResolver(KeyResolver resolver) {
      this.keyResolver = Inputs.notNull("keyResolver", resolver);
      return this;
    }

    /**
     * A ceiling charged on every request regardless of identity (key {@link #GLOBAL_KEY} under
     * {@code policy}, through the same limiter), so a spoofed or collapsed identity is still throttled.
     */
    public Builder globalCeiling(Policy policy) {
      return globalCeiling(limiter, policy);
    }

    /** {@link #globalCeiling(Policy)} through another limiter (e.g. a memory tier in front of a shared store). */
    public Builder globalCeiling(RateLimiter ceilingLimiter, Policy policy) {
      this.ceilingLimiter = Inputs.notNull("ceiling limiter", ceilingLimiter);
      this.ceilingPolicy = Inputs.notNull("ceiling policy", policy);
      return this;
    }

    /** Which header families to send. Default: {@link RateLimitHeaders#all()}. */
    public Builder headers(RateLimitHeaders headers) {
      this.headers = Inputs.notNull("headers", headers);
      return this;
    }

    /** Refund the request's permits when the handler throws or answers 5xx. */
    public Builder skipFailedRequests(boolean skip) {
      this.skipFailed = skip;
      return this;
    }

    /** Refund the request's permits when the handler answers below 400, so only failures count (a login endpoint). */
    public Builder skipSuccessfulRequests(boolean skip) {
      this.skipSuccessful = skip;
      return this;
    }

    /**
     * The clock the {@code RateLimit} header's {@code t} is measured against; give the limiter's
     * ticker. Default: the limiter's own ticker when it is a {@link ClockedRateLimiter} (the memory
     * tier), else {@link Ticker#system()}.
     */
    public Builder ticker(Ticker ticker) {
      this.ticker = Inputs.notNull("ticker", ticker);
      return this;
    }

    /**
     * Limits what requests cost rather than how many there are: each request reserves
     * {@code estimate} permits, and after the handler its ticket settles at the actual cost the
     * handler put in the request attribute {@code usage} (a {@link Number} or decimal string) or,
     * when there is none, the response header {@code usage} (e.g. {@code X-Usage-Tokens}).
     */
    public Builder cost(long estimate, String usage) {
      if (estimate < 1) {
        Inputs.permits(estimate, Long.MAX_VALUE, "(cost)");
      }
      if (usage == null || usage.isBlank()) {
        throw new IllegalArgumentException("usage name " + (usage == null ? "null" : Inputs.quote(usage))
            + " is blank; name the request attribute or response header the handler reports its cost in, such as \"X-Usage-Tokens\"");
      }
      this.reserve = estimate;
      this.usage = usage;
      return this;
    }

    public HttpRateLimit build() {
      RefundRule.of(skipFailed, skipSuccessful, "skipFailedRequests and skipSuccessfulRequests are both set; "
          + "then only 4xx answers would count: choose one");
      Policy client = policy != null ? policy : limiter.policy();
      Inputs.permits(reserve, client.limit(), client.name());
      if (resolver != null) {
        Policy unresolved = resolver.whenUnresolved();
        Inputs.permits(reserve, unresolved.limit(), unresolved.name());
      }
      if (ceilingPolicy != null) {
        Inputs.permits(reserve, ceilingPolicy.limit(), ceilingPolicy.name());
      }
      ceiling = ceilingPolicy == null ? null : CeilingRateLimiter.builder(limiter, ceilingPolicy)
          .identityPolicy(client).ceilingLimiter(ceilingLimiter).ceilingKey(GLOBAL_KEY).build();
      if (ticker == null) {
        ticker = limiter instanceof ClockedRateLimiter c ? c.ticker() : Ticker.system();
      }
      return new HttpRateLimit(this);
    }
  }
}
