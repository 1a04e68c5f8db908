package dev.sluice.grpc;

import dev.sluice.ClockedRateLimiter;
import dev.sluice.Decision;
import dev.sluice.RateLimiter;
import dev.sluice.RateLimiters;
import dev.sluice.Ticker;
import dev.sluice.http.HttpRateLimit;
import dev.sluice.http.KeyResolver;
import dev.sluice.http.RateLimitHeaders;
import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Rate limits the calls of a grpc-java server, over any Sluice {@link RateLimiter} (memory, Redis,
 * PostgreSQL, a composition):
 *
 * <pre>{@code
 * RateLimitInterceptor limits = RateLimitInterceptor.builder()
 *     .limit("shop.Catalog/*", perClient)               // every method of a service
 *     .limit("shop.Catalog/Export", perClient, hourly)  // a method: all of these, or none charged
 *     .keyFromHeader("x-api-key")                       // default: the peer's address
 *     .refundOn(Status.Code.INTERNAL, Status.Code.UNAVAILABLE)
 *     .build();
 * Server server = Grpc.newServerBuilderForPort(8443, creds).addService(ServerInterceptors.intercept(catalog, limits)).build();
 * }</pre>
 *
 * <p><b>Which calls.</b> A call is checked against the rule of its full method name
 * ({@code pkg.Service/Method}), else of its service ({@code pkg.Service/*}), else the rule for
 * {@code *}; a call no rule names passes unlimited. Each call spends one permit.
 *
 * <p><b>Who.</b> By default the connecting peer's address ({@code ip:203.0.113.7}); or a metadata
 * header ({@code header:x-api-key:abc}), any of sluice-http's {@link KeyResolver}s (the same key a
 * client has over HTTP, so one store can hold one budget for both), or a {@link GrpcKeyResolver} of
 * the method, metadata and transport attributes. A call without a key (no such header, an in-process
 * peer) is charged the one shared key {@code unknown}, as the HTTP filters do: callers without an
 * identity are throttled together, never let through unlimited and never refused for it. A key over
 * 128 characters or not well-formed is charged as its SHA-256 ({@link HttpRateLimit#normalize}).
 *
 * <p><b>Answers.</b> {@link GrpcVerdict}: a refusal closes the call with {@code RESOURCE_EXHAUSTED} (or
 * {@code UNAVAILABLE} when the closed failure mode refused because the store could not decide), a
 * {@code google.rpc.Status} detail with {@code google.rpc.RetryInfo} in {@code grpc-status-details-bin},
 * and the limit fields as trailers; an admitted call's response headers carry its limit fields.
 *
 * <p><b>Non-blocking.</b> The decision is the limiter's {@link RateLimiter#tryAcquireAsync}. When it is
 * complete at once (the memory tier), the call starts on the transport's thread as if there were no
 * interceptor in between. When it is not (Redis, PostgreSQL), {@code interceptCall} returns at once
 * with a listener that keeps the call's events in order; the call starts when the decision completes,
 * on the {@linkplain Builder#executor executor} (in the call's {@link Context}), so no transport thread
 * waits for a store round trip and no application code runs on the store client's threads.
 *
 * <p><b>Refunds.</b> With {@link Builder#refundOn}, an admitted call that ends with a named status
 * (closed by the handler with it; {@code CANCELLED} when the client cancelled; {@code UNKNOWN} when the
 * handler threw) gives its permits back once, on the executor.
 */
public final class RateLimitInterceptor implements ServerInterceptor {
  private static final System.Logger LOG = System.getLogger(RateLimitInterceptor.class.getName());
  /** Where decisions resume unless {@link Builder#executor} says otherwise: daemon threads, made as needed. */
  private static final ExecutorService DEFAULT_EXECUTOR = Executors.newCachedThreadPool(new Daemons());

  private final Map<String, Rule> rules;
  /** The {@code pkg.Service/*} rules by service name, so a call's lookup builds no pattern string. */
  private final Map<String, Rule> serviceRules;
  private final GrpcKeyResolver keys;
  private final RateLimitHeaders families;
  private final Set<Status.Code> refundOn;
  private final Executor executor;

  private RateLimitInterceptor(Builder b) {
    this.keys = b.keys;
    this.families = b.families;
    this.refundOn = Collections.unmodifiableSet(b.refundOn.isEmpty() ? EnumSet.noneOf(Status.Code.class) : EnumSet.copyOf(b.refundOn));
    this.executor = b.executor;
    Map<String, Rule> r = new HashMap<>();
    b.limits.forEach((pattern, legs) -> {
      RateLimiter limiter = legs.length == 1 ? legs[0] : RateLimiters.all(legs);
      Ticker t = b.ticker != null ? b.ticker : limiter instanceof ClockedRateLimiter c ? c.ticker() : Ticker.system();
      r.put(pattern, new Rule(pattern, limiter, t));
    });
    this.rules = Map.copyOf(r);
    Map<String, Rule> services = new HashMap<>();
    r.forEach((pattern, rule) -> {
      if (pattern.endsWith("/*")) {
        services.put(pattern.substring(0, pattern.length() - 2), rule);
      }
    });
    this.serviceRules = Map.copyOf(services);
  }

  /** A builder; name at least one {@link Builder#limit limit}. */
  public static Builder builder() {
    return new Builder();
  }

  /** One pattern's limiter (several legs are one all-or-nothing composition) and the clock its fields are told on. */
  private record Rule(String pattern, RateLimiter limiter, Ticker ticker) {}

  /** The limiter of {@code fullMethodName}'s rule ({@code pkg.Service/Method}), or null when no rule names it. */
  public RateLimiter limiterFor(String fullMethodName) {
    Rule r = ruleFor(fullMethodName);
    return r == null ? null : r.limiter;
  }

  private Rule ruleFor(String fullMethodName) {
    Rule r = rules.get(fullMethodName);
    if (r == null) {
      String service = MethodDescriptor.extractFullServiceName(fullMethodName);
      r = service == null ? null : serviceRules.get(service);
    }
    return r != null ? r : rules.get("*");
  }

  @Override public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    Rule rule = ruleFor(call.getMethodDescriptor().getFullMethodName());
    if (rule == null) {
      return next.startCall(call, headers);
    }
    String key = HttpRateLimit.normalize(keys.key(call.getMethodDescriptor(), headers, call.getAttributes()));
    CompletionStage<Decision> stage;
    try {
      stage = rule.limiter.tryAcquireAsync(key, 1);
    } catch (IllegalArgumentException refusedKey) {
      return refuse(call, Status.INVALID_ARGUMENT.withDescription("the rate-limit key of this call was refused: " + refusedKey.getMessage()));
    }
    CompletableFuture<Decision> now = done(stage);
    if (now != null) {
      return admit(call, headers, next, rule, key, now);
    }
    DelayedListener<Q> delayed = new DelayedListener<>();
    Context context = Context.current();
    stage.whenComplete((d, e) -> resume(context, () -> {
      ServerCall.Listener<Q> listener = admit(call, headers, next, rule, key, d, e);
      try {
        delayed.start(listener);
      } catch (RuntimeException | Error thrown) {
        applicationError(call, thrown);
      }
    }, call, delayed));
    return delayed;
  }

  /** The stage's future when it is already complete, else null. */
  private static CompletableFuture<Decision> done(CompletionStage<Decision> stage) {
    try {
      CompletableFuture<Decision> f = stage.toCompletableFuture();
      return f.isDone() ? f : null;
    } catch (UnsupportedOperationException notConvertible) {
      return null;
    }
  }

  private <Q> void resume(Context context, Runnable task, ServerCall<Q, ?> call, DelayedListener<Q> delayed) {
    try {
      executor.execute(context.wrap(task));
    } catch (RuntimeException rejected) {
      // The executor is shut down or full: the call never starts, and what it was waiting with is dropped.
      LOG.log(System.Logger.Level.WARNING, "a decided call could not resume on the executor (" + rejected + "); refused UNAVAILABLE");
      refuse(call, Status.UNAVAILABLE.withDescription("the rate limiter could not resume the call").withCause(rejected));
      delayed.start(new ServerCall.Listener<>() {});
    }
  }

  private <Q, R> ServerCall.Listener<Q> admit(ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next, Rule rule,
                                               String key, CompletableFuture<Decision> decided) {
    try {
      return admit(call, headers, next, rule, key, decided.join(), null);
    } catch (CompletionException | java.util.concurrent.CancellationException e) {
      return admit(call, headers, next, rule, key, null, e instanceof CompletionException && e.getCause() != null ? e.getCause() : e);
    }
  }

  private <Q, R> ServerCall.Listener<Q> admit(ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next, Rule rule,
                                               String key, Decision d, Throwable failed) {
    if (failed != null) {
      Throwable cause = failed instanceof CompletionException && failed.getCause() != null ? failed.getCause() : failed;
      if (cause instanceof IllegalArgumentException) {
        return refuse(call, Status.INVALID_ARGUMENT.withDescription("the rate-limit key of this call was refused: " + cause.getMessage()));
      }
      // The contract says a limiter never fails for store trouble: this is a bug in a limiter, not an outage.
      LOG.log(System.Logger.Level.ERROR, "the limiter of '" + rule.pattern + "' failed a decision instead of answering one", cause);
      return refuse(call, Status.INTERNAL.withDescription("the rate limiter failed").withCause(cause));
    }
    GrpcVerdict verdict = GrpcVerdict.of(d, key, rule.ticker.nowMicros(), families);
    if (!verdict.allowed()) {
      StatusRuntimeException e = verdict.toException();
      call.close(e.getStatus(), e.getTrailers());
      return new ServerCall.Listener<>() {};
    }
    LimitedCall<Q, R> limited = new LimitedCall<>(call, verdict.metadata(), rule.limiter, d.ticket().orElse(null), refundOn, executor);
    return limited.watch(next.startCall(limited, headers));
  }

  private static <Q> ServerCall.Listener<Q> refuse(ServerCall<Q, ?> call, Status status) {
    call.close(status, new Metadata());
    return new ServerCall.Listener<>() {};
  }

  /** The handler threw while its queued events were delivered off the transport: what grpc-java answers for a throw. */
  private static void applicationError(ServerCall<?, ?> call, Throwable thrown) {
    LOG.log(System.Logger.Level.WARNING, "a rate-limited call's handler threw", thrown);
    try {
      call.close(Status.UNKNOWN.withDescription("Application error processing RPC").withCause(thrown), new Metadata());
    } catch (RuntimeException alreadyClosed) {
      // the handler closed the call before it threw
    }
  }

  @Override public String toString() {
    return "RateLimitInterceptor" + rules.keySet();
  }

  /** Settings of a {@link RateLimitInterceptor}; fails fast on a bad value, naming it. Not thread-safe. */
  public static final class Builder {
    private final Map<String, RateLimiter[]> limits = new java.util.LinkedHashMap<>();
    private GrpcKeyResolver keys = resolver(KeyResolver.clientAddress());
    private RateLimitHeaders families = RateLimitHeaders.all();
    private Set<Status.Code> refundOn = EnumSet.noneOf(Status.Code.class);
    private Ticker ticker;
    private Executor executor = DEFAULT_EXECUTOR;

    private Builder() {}

    /**
     * Limits the calls {@code pattern} names with {@code limiters}: one limiter, or several that are
     * charged all or none ({@link RateLimiters#all}). {@code pattern} is a full method name
     * ({@code pkg.Service/Method}), a service ({@code pkg.Service/*}) or {@code *} (every call no other
     * rule names); the most specific rule of a call decides it.
     */
    public Builder limit(String pattern, RateLimiter... limiters) {
      String p = pattern(pattern);
      if (limiters == null || limiters.length == 0) {
        throw new IllegalArgumentException("limit '" + p + "' names no limiter; give one, or several to charge all or none");
      }
      for (RateLimiter l : limiters) {
        Objects.requireNonNull(l, "a limiter of '" + p + "'");
      }
      if (limits.putIfAbsent(p, limiters.clone()) != null) {
        throw new IllegalArgumentException("limit '" + p + "' is given twice; give its limiters in one call");
      }
      return this;
    }

    /** {@code limit("*", limiters)}: every call that no other rule names. */
    public Builder limit(RateLimiter... limiters) {
      return limit("*", limiters);
    }

    private static String pattern(String pattern) {
      String rule = "; use pkg.Service/Method, pkg.Service/* or *";
      if (pattern == null || pattern.isBlank()) {
        throw new IllegalArgumentException("method pattern " + (pattern == null ? "null" : "'" + pattern + "'") + " is blank" + rule);
      }
      if (pattern.equals("*")) {
        return pattern;
      }
      int slash = pattern.indexOf('/');
      String service = slash < 0 ? "" : pattern.substring(0, slash);
      String method = slash < 0 ? "" : pattern.substring(slash + 1);
      boolean ok = !service.isEmpty() && !method.isEmpty() && service.indexOf('*') < 0 && method.indexOf('/') < 0
          && (method.equals("*") || method.indexOf('*') < 0) && pattern.chars().noneMatch(Character::isWhitespace);
      if (!ok) {
        throw new IllegalArgumentException("method pattern '" + pattern + "' is not a full method name, a service or *" + rule);
      }
      return pattern;
    }

    /** The key is the value of metadata header {@code name}: {@code header:x-api-key:abc} (sluice-http's {@link KeyResolver#header}). */
    public Builder keyFromHeader(String name) {
      if (name == null || name.isBlank() || name.strip().toLowerCase(java.util.Locale.ROOT).endsWith(Metadata.BINARY_HEADER_SUFFIX)) {
        throw new IllegalArgumentException("key header " + (name == null ? "null" : "'" + name + "'")
            + " is blank or binary; name an ASCII metadata header such as \"x-api-key\"");
      }
      Metadata.Key.of(name.strip(), Metadata.ASCII_STRING_MARSHALLER); // throws, naming it, when it is no metadata name
      return keyResolver(KeyResolver.header(name));
    }

    /** The key is the connecting peer's address, {@code ip:203.0.113.7} (the default). */
    public Builder keyFromPeer() {
      return keyResolver(KeyResolver.clientAddress());
    }

    /** The key is what one of sluice-http's resolvers gives the call (see {@link CallView}'s reading of a call). */
    public Builder keyResolver(KeyResolver resolver) {
      this.keys = resolver(Objects.requireNonNull(resolver, "keyResolver"));
      return this;
    }

    /** The key is a function of the call's method, metadata and transport attributes. */
    public Builder key(GrpcKeyResolver resolver) {
      this.keys = Objects.requireNonNull(resolver, "key");
      return this;
    }

    private static GrpcKeyResolver resolver(KeyResolver r) {
      return (method, headers, attributes) -> r.resolve(new CallView(method, headers, attributes));
    }

    /** Which limit-field families the metadata carry (sluice-http's words). Default: {@link RateLimitHeaders#all()}. */
    public Builder headers(RateLimitHeaders families) {
      this.families = Objects.requireNonNull(families, "headers");
      return this;
    }

    /**
     * Gives an admitted call's permits back when it ends with one of {@code codes} (for example
     * {@code INTERNAL} and {@code UNAVAILABLE}, so that a failed call does not count; {@code OK}, so
     * that only failures count). Default: none.
     */
    public Builder refundOn(Status.Code... codes) {
      Set<Status.Code> s = EnumSet.noneOf(Status.Code.class);
      for (Status.Code c : Objects.requireNonNull(codes, "codes")) {
        s.add(Objects.requireNonNull(c, "a refund status code"));
      }
      this.refundOn = s;
      return this;
    }

    /**
     * The clock the fields' seconds ({@code ratelimit}'s {@code t}) are told against; give the limiter's.
     * Default: each limiter's own when it is a {@link ClockedRateLimiter}, else {@link Ticker#system()}.
     */
    public Builder ticker(Ticker ticker) {
      this.ticker = Objects.requireNonNull(ticker, "ticker");
      return this;
    }

    /**
     * Where a call resumes when its decision was not complete at once (a remote store), and where refunds
     * run. Give the server's own executor to keep handlers on its threads. Default: a shared pool of
     * daemon threads made as needed, as grpc-java's default server executor is.
     */
    public Builder executor(Executor executor) {
      this.executor = Objects.requireNonNull(executor, "executor");
      return this;
    }

    /** @throws IllegalStateException when no limit was given */
    public RateLimitInterceptor build() {
      if (limits.isEmpty()) {
        throw new IllegalStateException("no limit is given; name the calls to limit with limit(pattern, limiter)");
      }
      return new RateLimitInterceptor(this);
    }

    @Override public String toString() {
      return "RateLimitInterceptor.Builder" + Arrays.toString(limits.keySet().toArray());
    }
  }

  /** Daemon threads named sluice-grpc-N. */
  private static final class Daemons implements java.util.concurrent.ThreadFactory {
    private final AtomicInteger n = new AtomicInteger();

    @Override public Thread newThread(Runnable r) {
      Thread t = new Thread(r, "sluice-grpc-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    }
  }
}
