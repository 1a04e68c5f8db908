package dev.sluice.server.envoy;

import com.google.protobuf.Duration;
import com.google.protobuf.InvalidProtocolBufferException;
import dev.sluice.Decision;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.compose.AllOf;
import dev.sluice.http.HttpVerdict;
import dev.sluice.http.RateLimitHeaders;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.envoyproxy.envoy.type.v3.RateLimitUnit;
import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.io.InputStream;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@code envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit}, decided by Sluice limiters.
 *
 * <p>Per request: every descriptor is matched to its rule ({@link EnvoyConfig#match}); rules named in
 * another matched rule's {@code replaces} are dropped; {@code unlimited} descriptors are answered
 * {@code OK} with {@code limit_remaining} 2^32-1 without a store call; the rest are charged
 * {@code hits_addend} permits (the descriptor's own, else the request's, 0 meaning 1; a descriptor's
 * explicit 0 only reads). The overall code is {@code OVER_LIMIT} when any descriptor not in shadow
 * mode is refused. Unlike envoyproxy/ratelimit, which leaves every descriptor charged, a refused
 * request is charged nowhere: the descriptors already charged for it are refunded with their tickets
 * (all-or-nothing: {@link AllOf#refund}, the compensation every all-of call uses).
 *
 * <p>Store failures follow the limiter's failure mode, the one rule: a decision the failure mode
 * refused (closed) is answered with gRPC status {@code UNAVAILABLE}, so Envoy applies its
 * {@code failure_mode_deny}; one it allowed (open) is answered {@code OK} overall with that
 * descriptor's code {@code UNKNOWN} (no limit is known) and no limit fields; one its fallback decided
 * is answered as any decision (its tickets refund into the fallback).
 *
 * <p>What one request may ask is bounded before anything is decided, each bound an
 * {@code INVALID_ARGUMENT} naming it: at most {@link #MAX_DESCRIPTORS} descriptors of at most
 * {@link #MAX_ENTRIES} entries each (envoyproxy/ratelimit sets no bound but gRPC's 4 MiB message; a
 * route's descriptors are its few {@code rate_limits} actions, so more is a broken or hostile client,
 * and 10,000 in one request filled the memory store's key table). Bytes that are no
 * {@code RateLimitRequest} (invalid UTF-8 in a string, a truncated message, garbage) are
 * {@code INVALID_ARGUMENT} too, parsed by {@link #definition()}'s marshaller, which never throws
 * (grpc-java answers a marshaller's exception {@code UNKNOWN} and logs its stack trace); they are
 * logged at most once per {@link #MALFORMED_LOG_INTERVAL}, with the count of those not logged.
 */
final class EnvoyRateLimitService {
  private static final System.Logger LOG = System.getLogger(EnvoyRateLimitService.class.getName());
  static final int MAX_UINT32 = -1; // 2^32 - 1 as an unsigned proto uint32
  /** Most descriptors in one request. */
  static final int MAX_DESCRIPTORS = 64;
  /** Most entries in one descriptor. */
  static final int MAX_ENTRIES = 32;
  /**
   * Most hits one descriptor adds to its meters: 2^32 - 1, the most any rule of the reference grants
   * ({@code requests_per_unit} is a uint32). A {@code hits_addend} of 2^64 - 1 counted whole put
   * {@code total_hits} at 9.2e18, where a double no longer moves by one hit.
   */
  static final long MAX_COUNTED_HITS = 0xFFFF_FFFFL;
  /** At most one log line per this interval for malformed requests. */
  static final java.time.Duration MALFORMED_LOG_INTERVAL = java.time.Duration.ofSeconds(10);

  /** The configuration in force; {@link #reload} swaps it whole, and each request reads it once. */
  private volatile EnvoyConfig config;
  private final RateLimiter limiter;
  private final EnvoyMetrics metrics;
  private final RateLimitHeaders headers;
  private final Ticker ticker;
  private final AtomicLong nextMalformedLog = new AtomicLong(Long.MIN_VALUE);
  private final AtomicLong malformedNotLogged = new AtomicLong();

  /** {@code headers} null: no {@code response_headers_to_add}. */
  EnvoyRateLimitService(EnvoyConfig config, RateLimiter limiter, EnvoyMetrics metrics, RateLimitHeaders headers, Ticker ticker) {
    this.config = config;
    this.limiter = limiter;
    this.metrics = metrics;
    this.headers = headers;
    this.ticker = ticker;
  }

  /**
   * Puts {@code next} in force for the requests that start from now on. Budgets are named by their
   * rule's stat key, not its numbers, so a rule that stays keeps its counts, and changed numbers
   * apply to them at the next hit; a request already started finishes on the configuration it began with.
   */
  void reload(EnvoyConfig next) {
    metrics.domains(next.domains());
    config = next;
  }

  EnvoyConfig config() {
    return config;
  }

  /** A {@code ShouldRateLimit} request as it arrived: the message, or why its bytes are none. */
  record Arrived(RateLimitRequest request, String malformed) {}

  /** Parses like the generated marshaller, but never throws: bytes that are no request arrive as {@code malformed}. */
  private static final MethodDescriptor.Marshaller<Arrived> ARRIVED = new MethodDescriptor.Marshaller<>() {
    private final MethodDescriptor.Marshaller<RateLimitRequest> proto = RateLimitServiceGrpc.getShouldRateLimitMethod().getRequestMarshaller();

    @Override public InputStream stream(Arrived value) {
      return proto.stream(value.request());
    }

    @Override public Arrived parse(InputStream stream) {
      try {
        return new Arrived(proto.parse(stream), null);
      } catch (RuntimeException e) {
        Throwable why = e.getCause() instanceof InvalidProtocolBufferException p ? p : e;
        return new Arrived(null, why.getMessage() == null ? why.getClass().getSimpleName() : why.getMessage());
      }
    }
  };

  /**
   * The rate-limit service for a gRPC server: {@code ShouldRateLimit} through {@link #ARRIVED}, under the
   * published service's name and schema (so reflection describes it as the generated stubs do).
   */
  ServerServiceDefinition definition() {
    MethodDescriptor<RateLimitRequest, RateLimitResponse> published = RateLimitServiceGrpc.getShouldRateLimitMethod();
    MethodDescriptor<Arrived, RateLimitResponse> method = published.toBuilder(ARRIVED, published.getResponseMarshaller()).build();
    ServiceDescriptor service = ServiceDescriptor.newBuilder(RateLimitServiceGrpc.SERVICE_NAME)
        .setSchemaDescriptor(RateLimitServiceGrpc.getServiceDescriptor().getSchemaDescriptor()).addMethod(method).build();
    return ServerServiceDefinition.builder(service).addMethod(method, ServerCalls.asyncUnaryCall(this::shouldRateLimit)).build();
  }

  void shouldRateLimit(Arrived arrived, StreamObserver<RateLimitResponse> out) {
    if (arrived.malformed() != null) {
      logMalformed(arrived.malformed());
      out.onError(Status.INVALID_ARGUMENT.withDescription("the request is not a valid " + RateLimitRequest.getDescriptor().getFullName()
          + ": " + arrived.malformed()).asRuntimeException());
      return;
    }
    RateLimitResponse response;
    try {
      response = decide(arrived.request());
    } catch (Refusal e) {
      out.onError(e.status.asRuntimeException());
      return;
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.ERROR, "ShouldRateLimit failed", e);
      out.onError(Status.INTERNAL.withDescription("internal error; the server log has the details").asRuntimeException());
      return;
    }
    out.onNext(response);
    out.onCompleted();
  }

  /** One warning per {@link #MALFORMED_LOG_INTERVAL} at most, on the service's clock, saying how many were not logged. */
  private void logMalformed(String why) {
    long now = ticker.nowMicros();
    long at = nextMalformedLog.get();
    if (now >= at && nextMalformedLog.compareAndSet(at, now + MALFORMED_LOG_INTERVAL.toNanos() / 1_000)) {
      LOG.log(System.Logger.Level.WARNING, "malformed ShouldRateLimit request answered INVALID_ARGUMENT (" + why + "); "
          + malformedNotLogged.getAndSet(0) + " more since the last such warning");
    } else {
      malformedNotLogged.incrementAndGet();
    }
  }

  /** An answer that is a gRPC error status, not a response. */
  private static final class Refusal extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final transient Status status;

    Refusal(Status status) {
      super(status.getDescription(), null, false, false);
      this.status = status;
    }
  }

  /** One descriptor's limit for this request: a configured rule or the descriptor's own override. */
  private record Limit(EnvoyConfig.Rule rule, Policy policy, String key, String statKey, boolean statCarriesValues, long requestsPerUnit,
                       RateLimitResponse.RateLimit.Unit unit, String name) {}

  RateLimitResponse decide(RateLimitRequest request) {
    if (request.getDomain().isEmpty()) {
      throw new Refusal(Status.INVALID_ARGUMENT.withDescription("rate limit domain must not be empty"));
    }
    int n = request.getDescriptorsCount();
    if (n == 0) {
      throw new Refusal(Status.INVALID_ARGUMENT.withDescription("rate limit descriptor list must not be empty"));
    }
    if (n > MAX_DESCRIPTORS) {
      throw new Refusal(Status.INVALID_ARGUMENT.withDescription("the request has " + n + " descriptors; at most " + MAX_DESCRIPTORS
          + " are accepted in one request"));
    }
    for (int i = 0; i < n; i++) {
      int entries = request.getDescriptors(i).getEntriesCount();
      if (entries > MAX_ENTRIES) {
        throw new Refusal(Status.INVALID_ARGUMENT.withDescription("descriptor #" + (i + 1) + " has " + entries + " entries; at most "
            + MAX_ENTRIES + " are accepted in one descriptor"));
      }
    }
    EnvoyConfig config = this.config; // one configuration for the whole request, whatever a reload does meanwhile
    Limit[] limits = new Limit[n];
    boolean[] unlimited = new boolean[n];
    Set<String> replaced = new HashSet<>();
    for (int i = 0; i < n; i++) {
      RateLimitDescriptor d = request.getDescriptors(i);
      limits[i] = limit(config, request.getDomain(), d, i);
      if (limits[i] != null && limits[i].rule() != null) {
        replaced.addAll(limits[i].rule().replaces());
        if (limits[i].rule().unlimited()) {
          unlimited[i] = true;
        }
      }
    }
    for (int i = 0; i < n; i++) {
      if (limits[i] != null && limits[i].rule() != null && !limits[i].name().isEmpty() && replaced.contains(limits[i].name())) {
        limits[i] = null; // replaced: not evaluated, not counted
      }
    }

    Decision[] decisions = new Decision[n];
    Code[] codes = new Code[n];
    long[] hits = new long[n];
    boolean refused = false;
    Decision failedClosed = null;
    for (int i = 0; i < n; i++) {
      Limit l = limits[i];
      if (l == null || unlimited[i]) {
        codes[i] = Code.OK;
        continue;
      }
      RateLimitDescriptor d = request.getDescriptors(i);
      hits[i] = d.hasHitsAddend() ? d.getHitsAddend().getValue() : Math.max(1, Integer.toUnsignedLong(request.getHitsAddend()));
      if (hits[i] < 0) {
        hits[i] = Long.MAX_VALUE; // a uint64 past 2^63: more than any rule grants, over the limit
      }
      EnvoyMetrics.Meters m = metrics.meters(request.getDomain(), l.statKey(), l.statCarriesValues());
      long counted = Math.min(hits[i], MAX_COUNTED_HITS);
      m.totalHits(counted);
      boolean over;
      if (l.policy() == null) {
        over = true; // requests_per_unit 0: every hit is over the limit
      } else {
        Decision dec = decide(l, hits[i]);
        decisions[i] = dec;
        if (dec == null) {
          over = true;
        } else if (dec.reason().isFailure()) {
          if (!dec.allowed() && failedClosed == null) {
            failedClosed = dec;
          }
          codes[i] = Code.UNKNOWN;
          continue;
        } else {
          over = !dec.allowed();
        }
      }
      boolean shadow = l.rule() != null && l.rule().shadowMode();
      if (over) {
        m.overLimit(counted);
        if (shadow) {
          m.shadowMode(counted);
          codes[i] = Code.OK;
        } else {
          codes[i] = Code.OVER_LIMIT;
          refused = true;
        }
      } else {
        m.withinLimit(counted);
        if (EnvoyMetrics.nearLimit(decisions[i])) {
          m.nearLimit(counted);
        }
        codes[i] = Code.OK;
      }
    }
    if (refused || failedClosed != null) {
      // All or nothing: a request that does not pass is charged nowhere (AllOf's compensation).
      List<AllOf.Charge> charged = new ArrayList<>(n);
      List<Decision> allowed = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        if (decisions[i] != null && decisions[i].allowed() && decisions[i].ticket().isPresent()) {
          charged.add(new AllOf.Charge(limiter, limits[i].key(), hits[i], limits[i].policy()));
          allowed.add(decisions[i]);
        }
      }
      AllOf.refund(charged, allowed);
    }
    if (failedClosed != null) {
      throw new Refusal(Status.UNAVAILABLE.withDescription("the rate-limit store could not decide ("
          + dev.sluice.kernel.DecisionWords.of(failedClosed.reason()) + ") and --failure-mode refused the request"));
    }

    // "Now" once the limiter has decided, as the JSON API reads it: read before, a first hit's reset was
    // more than the window away (60 s + 22 us under a 60 s rule) and RateLimit's t= one past w=.
    long now = ticker.nowMicros();
    RateLimitResponse.Builder r = RateLimitResponse.newBuilder().setOverallCode(refused ? Code.OVER_LIMIT : Code.OK);
    Decision shown = null;
    for (int i = 0; i < n; i++) {
      RateLimitResponse.DescriptorStatus.Builder s = RateLimitResponse.DescriptorStatus.newBuilder().setCode(codes[i]);
      Limit l = limits[i];
      if (unlimited[i]) {
        s.setLimitRemaining(MAX_UINT32);
      } else if (l != null && codes[i] != Code.UNKNOWN) {
        s.setCurrentLimit(RateLimitResponse.RateLimit.newBuilder().setRequestsPerUnit((int) l.requestsPerUnit())
            .setUnit(l.unit()).setName(l.name()));
        Decision dec = decisions[i];
        if (dec != null) {
          s.setLimitRemaining((int) Math.min(dec.remaining(), 0xFFFF_FFFFL));
          long wait = dec.allowed() ? Math.max(0, dec.resetAtMicros() - now) : dec.retryAfterMicros();
          s.setDurationUntilReset(Duration.newBuilder().setSeconds(wait / 1_000_000).setNanos((int) (wait % 1_000_000) * 1_000));
          shown = moreTelling(shown, dec, codes[i] == Code.OVER_LIMIT);
        } else {
          long unitMicros = unitSeconds(l.unit()) * 1_000_000;
          s.setDurationUntilReset(Duration.newBuilder().setSeconds(unitMicros / 1_000_000));
        }
      }
      r.addStatuses(s);
    }
    if (headers != null && shown != null) {
      for (HttpVerdict.Header h : HttpVerdict.of(shown, now, headers).headers()) {
        r.addResponseHeadersToAdd(HeaderValue.newBuilder().setKey(h.name()).setValue(h.value()));
      }
    }
    return r.build();
  }

  /**
   * The decision whose limit headers the response carries: of the decisions the store made on the
   * primary path that count (not a shadow-mode refusal), the most restrictive ({@link AllOf#mostRestrictive}).
   */
  private static Decision moreTelling(Decision current, Decision candidate, boolean counts) {
    if (candidate.path() != Path.PRIMARY || (!candidate.allowed() && !counts)) {
      return current;
    }
    return current == null ? candidate : AllOf.mostRestrictive(current, candidate);
  }

  /** Charges (or, for 0 hits, reads) one descriptor; null when the hits can never fit or the key is refused. */
  private Decision decide(Limit l, long hits) {
    try {
      if (hits == 0) {
        return limiter.peek(l.key(), l.policy());
      }
      if (hits > l.policy().limit()) {
        return null; // more than the rule ever grants at once: over the limit, nothing charged
      }
      return limiter.tryAcquire(l.key(), hits, l.policy());
    } catch (IllegalArgumentException e) {
      // A key the store refuses (e.g. over --max-key-length): over the limit, never a way around it.
      LOG.log(System.Logger.Level.DEBUG, "descriptor refused: " + e.getMessage());
      return null;
    }
  }

  private Limit limit(EnvoyConfig config, String domain, RateLimitDescriptor d, int index) {
    List<Map.Entry<String, String>> entries = new ArrayList<>(d.getEntriesCount());
    for (RateLimitDescriptor.Entry e : d.getEntriesList()) {
      entries.add(new AbstractMap.SimpleImmutableEntry<>(e.getKey(), e.getValue()));
    }
    if (d.hasLimit()) {
      return override(domain, d, entries, index);
    }
    EnvoyConfig.Match m = config.match(domain, entries);
    if (m == null) {
      return null;
    }
    EnvoyConfig.Rule rule = m.rule();
    RateLimitResponse.RateLimit.Unit unit = rule.unit() == null ? RateLimitResponse.RateLimit.Unit.UNKNOWN
        : RateLimitResponse.RateLimit.Unit.valueOf(rule.unit().name());
    return new Limit(rule, rule.policy(), m.key(), m.statKey(), !m.statKey().equals(rule.statKey()), rule.requestsPerUnit(), unit, rule.name());
  }

  /**
   * A descriptor's own {@code limit}: a fixed window of its numbers, whatever the configuration says,
   * as in envoyproxy/ratelimit; its budget is the domain, the entries and the unit.
   */
  private Limit override(String domain, RateLimitDescriptor d, List<Map.Entry<String, String>> entries, int index) {
    RateLimitDescriptor.RateLimitOverride o = d.getLimit();
    RateLimitUnit u = o.getUnit();
    if (u == RateLimitUnit.UNKNOWN || u == RateLimitUnit.UNRECOGNIZED) {
      throw new Refusal(Status.INVALID_ARGUMENT.withDescription("descriptor #" + (index + 1) + ": limit override has unit "
          + u + "; use SECOND, MINUTE, HOUR, DAY, WEEK, MONTH or YEAR"));
    }
    EnvoyConfig.Unit unit = EnvoyConfig.Unit.valueOf(u.name());
    long rpu = Integer.toUnsignedLong(o.getRequestsPerUnit());
    StringBuilder stat = new StringBuilder(domain);
    for (Map.Entry<String, String> e : entries) {
      stat.append('.').append(e.getKey());
      if (!e.getValue().isEmpty()) {
        stat.append('_').append(e.getValue());
      }
    }
    String statKey = stat.toString();
    Policy policy = null;
    if (rpu > 0) {
      String name = EnvoyConfig.policyName("override:" + domain + ":" + String.join(".", entries.stream().map(Map.Entry::getKey).toList())
          + ":" + unit.name());
      try {
        policy = Policy.fixedWindow(name, rpu, unit.duration());
      } catch (IllegalArgumentException e) {
        throw new Refusal(Status.INVALID_ARGUMENT.withDescription("descriptor #" + (index + 1) + ": limit override " + rpu + " per "
            + unit + ": " + e.getMessage()));
      }
    }
    return new Limit(null, policy, EnvoyConfig.plainKey(domain, entries), statKey, true, rpu, RateLimitResponse.RateLimit.Unit.valueOf(unit.name()), "");
  }

  private static long unitSeconds(RateLimitResponse.RateLimit.Unit u) {
    EnvoyConfig.Unit unit = EnvoyConfig.Unit.parse(u.name());
    return unit == null ? 1 : unit.seconds;
  }
}
