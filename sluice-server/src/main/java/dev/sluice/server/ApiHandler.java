package dev.sluice.server;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.Decision;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.http.HttpVerdict;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.kernel.Inputs;
import dev.sluice.kernel.PolicyTable;
import dev.sluice.kernel.Readiness;
import dev.sluice.kernel.Store;
import dev.sluice.memory.MemoryRateLimiter;
import io.micrometer.core.instrument.Timer;
import java.io.IOException;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.Fields;

/**
 * The JSON HTTP API, as a Jetty core handler (no servlet layer: the API is six routes).
 *
 * <pre>
 *   POST /v1/acquire  {"policy":"api","key":"user:42","permits":1}  -> 200 allowed | 429 refused | 503 store down (the HttpVerdict)
 *   POST /v1/refund   {"ticket":"..."}                              -> 200 {"result":"applied"|"no_effect"} | 503 failed
 *   POST /v1/settle   {"ticket":"...","actual":12}                  -> 200 {"result":"applied"|"no_effect"} | 503 failed
 *   GET  /v1/peek?policy=api&amp;key=user:42                            -> 200, the decision one permit would get, nothing charged
 *   GET  /v1/policies                                               -> the configured policies
 *   GET  /healthz                                                   -> 200 up: liveness, the process answers (no store call)
 *   GET  /readyz                                                    -> 200 ready | 503 not_ready: the store answered its last probe
 *   GET  /metrics                                                   -> Prometheus text
 * </pre>
 * A bad request gets 400 and {@code {"error":"bad_request","message":"..."}} saying what was wrong; an
 * unexpected failure gets 500 and a generic message (the stack trace goes to the server log only).
 *
 * <p>This file is a little over 500 lines because it is the routes above and their answers, one
 * method each; the input rules are {@link JsonInput}, the tickets {@link TicketCodec}.
 */
final class ApiHandler extends Handler.Abstract {
  private static final System.Logger LOG = System.getLogger(ApiHandler.class.getName());
  private static final String JSON = JsonInput.JSON;
  private final JsonFactory json = JsonInput.MAPPER.getFactory();
  private static final Set<String> ACQUIRE_FIELDS = Set.of("policy", "key", "permits");
  private static final Set<String> REFUND_FIELDS = Set.of("ticket");
  private static final Set<String> SETTLE_FIELDS = Set.of("ticket", "actual");

  /** One configured policy and everything needed to answer for it without a lookup. */
  record Entry(Policy policy, RateLimiter limiter, ServerMetrics.PolicyMeters meters, long ticketLifeMicros) {}

  /** The header families of sluice-http; with {@link HttpVerdict} the service answers exactly what the HTTP filters answer. */
  private volatile RateLimitHeaders headers = RateLimitHeaders.all();

  /** {@code --partition-keys}: the draft's {@code pk} on the client's policy items (see RateLimitHeaders). */
  void partitionKeys(boolean on) {
    headers = on ? RateLimitHeaders.all().withPartitionKeys() : RateLimitHeaders.all();
  }

  /** The policies in force: replaced whole by {@link #reload}, read once per request. */
  private volatile Map<String, Entry> entries;
  /** The kernel's table behind {@link #entries}: what a reload keeps. */
  private PolicyTable<ServerMetrics.PolicyMeters> table;
  private final Store store;
  private final Ticker ticker;
  private final TicketCodec tickets;
  private final SpentSet spent;
  private final ServerMetrics metrics;
  private final Timer acquireTimer;
  private final Timer refundTimer;
  private final Timer settleTimer;
  private final Timer peekTimer;
  private volatile String policiesBody;
  private final String livenessBody;
  private final Readiness readiness;
  private final java.util.concurrent.Semaphore pending;
  private final int maxPending;

  ApiHandler(List<Policy> policies, Store store, Ticker ticker, TicketCodec tickets, SpentSet spent, ServerMetrics metrics,
             Readiness readiness, int maxPending) {
    if (maxPending < 1) {
      throw new IllegalArgumentException("--max-pending " + maxPending + " is not positive; it must be at least 1");
    }
    this.maxPending = maxPending;
    this.pending = new java.util.concurrent.Semaphore(maxPending);
    this.store = store;
    this.readiness = readiness;
    this.ticker = ticker;
    this.tickets = tickets;
    this.spent = spent;
    this.metrics = metrics;
    this.entries = Map.of();
    this.acquireTimer = metrics.requestTimer("acquire");
    this.refundTimer = metrics.requestTimer("refund");
    this.settleTimer = metrics.requestTimer("settle");
    this.peekTimer = metrics.requestTimer("peek");
    this.livenessBody = "{\"status\":\"up\",\"store\":\"" + store.name() + "\"}";
    reload(policies);
  }

  /**
   * Puts {@code policies} in force through the kernel's {@link PolicyTable}: a policy whose name stays
   * keeps its limiter, its counts and its meters; a new name gets a limiter of the store and meters.
   * Returns what changed.
   */
  synchronized String reload(List<Policy> policies) {
    PolicyTable.Change change;
    if (table == null) {
      table = new PolicyTable<>(store, policies, metrics::forPolicy, meters -> metrics.listener());
      change = new PolicyTable.Change(List.of(), policies.stream().map(Policy::name).toList(), List.of());
    } else {
      change = table.reload(policies);
    }
    Map<String, Entry> m = new LinkedHashMap<>();
    for (PolicyTable.Entry<ServerMetrics.PolicyMeters> e : table.entries().values()) {
      Policy p = e.policy();
      m.put(p.name(), new Entry(p, e.limiter(), e.attachment(), p.algorithm().quotaMicros()));
    }
    for (String added : change.added()) {
      if (m.get(added).limiter() instanceof MemoryRateLimiter memory) {
        metrics.trackedKeys(added, memory::trackedKeys);
      }
    }
    this.policiesBody = write(g -> {
      g.writeStartObject();
      g.writeStringField("store", store.name());
      g.writeArrayFieldStart("policies");
      for (Policy p : policies) {
        g.writeObject(PolicyFile.describe(p));
      }
      g.writeEndArray();
      g.writeEndObject();
    });
    this.entries = java.util.Collections.unmodifiableMap(m);
    return change.toString();
  }

  /** The policies in force, as {@code GET /v1/policies} lists them. */
  String policiesBody() {
    return policiesBody;
  }

  /** The entry of a configured policy (400 naming the configured ones otherwise), for the admin API. */
  Entry configured(String name) {
    return entry(name);
  }

  RateLimiter limiter(String policy) {
    return entries.get(policy).limiter();
  }

  /** An answer that is not a decision: an error status with its JSON body. */
  static final class ApiError extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final int status;
    final String code;
    /** The answer closes the connection: what is left of the request cannot be read (a body that timed out, one cut short). */
    final boolean closes;

    ApiError(int status, String code, String message) {
      this(status, code, message, false);
    }

    ApiError(int status, String code, String message, boolean closes) {
      super(message, null, false, false);
      this.status = status;
      this.code = code;
      this.closes = closes;
    }

    ApiError closing() {
      return new ApiError(status, code, getMessage(), true);
    }
  }

  /** A route that answers from its request's JSON body. */
  @FunctionalInterface
  interface BodyRoute {
    void answer(JsonNode body) throws Exception;
  }

  /** {@code --body-timeout}: how long a body may take to arrive once the headers have. */
  private volatile long bodyTimeoutMillis = Durations.parse("--body-timeout", SluiceServer.DEFAULT_BODY_TIMEOUT).toMillis();

  void bodyTimeout(java.time.Duration timeout) {
    bodyTimeoutMillis = timeout.toMillis();
  }

  /**
   * Reads the request's body as a JSON object of {@code fields} without holding a thread while it
   * arrives ({@link RequestBody}), then runs {@code route} on it; every failure, the body's or the
   * route's, is answered as {@link #handle} answers it. {@code timer}, when given, times the request.
   */
  void withBody(Request request, Response response, Callback callback, Set<String> fields, String usage, Timer timer, long start,
                BodyRoute route) {
    RequestBody.read(request, bodyTimeoutMillis, JsonInput.refusal(request), (bytes, error) -> {
      try {
        if (error != null) {
          throw error;
        }
        route.answer(JsonInput.parseObject(bytes, fields, usage));
      } catch (Throwable t) {
        fail(request, response, callback, t);
      } finally {
        if (timer != null) {
          timer.record(System.nanoTime() - start, java.util.concurrent.TimeUnit.NANOSECONDS);
        }
      }
    });
  }

  /** The answer to a request that failed: its {@link ApiError}, a 400 for a rule broken, a 500 (logged) for anything else. */
  private void fail(Request request, Response response, Callback callback, Throwable t) {
    if (t instanceof ApiError e) {
      sendError(response, callback, e);
    } else if (t instanceof IllegalArgumentException e) {
      // Every validation in Sluice (Checks) throws this with a message naming the value and the rule.
      sendError(response, callback, 400, "bad_request", e.getMessage());
    } else {
      LOG.log(System.Logger.Level.ERROR, "request " + request.getMethod() + " " + Request.getPathInContext(request) + " failed", t);
      sendError(response, callback, 500, "internal", "internal error; the server log has the details");
    }
  }

  @Override public boolean handle(Request request, Response response, Callback callback) {
    String path = Request.getPathInContext(request);
    String method = request.getMethod();
    long start = System.nanoTime();
    Timer timer = null;
    try {
      switch (path) {
        case "/v1/acquire" -> {
          JsonInput.requireMethod(method, "POST");
          // answers when the decision completes; times itself
          withBody(request, response, callback, ACQUIRE_FIELDS, "acquire takes policy, key and permits", null, start,
              body -> acquire(body, request, response, callback, start));
        }
        case "/v1/refund" -> {
          JsonInput.requireMethod(method, "POST");
          withBody(request, response, callback, REFUND_FIELDS, "refund takes ticket", refundTimer, start,
              body -> refund(body, response, callback));
        }
        case "/v1/settle" -> {
          JsonInput.requireMethod(method, "POST");
          withBody(request, response, callback, SETTLE_FIELDS, "settle takes ticket and actual", settleTimer, start,
              body -> settle(body, response, callback));
        }
        case "/v1/peek" -> {
          timer = peekTimer;
          JsonInput.requireMethod(method, "GET");
          peek(request, response, callback);
        }
        case "/v1/policies" -> {
          JsonInput.requireMethod(method, "GET");
          send(response, callback, 200, policiesBody);
        }
        case "/healthz" -> {
          JsonInput.requireMethod(method, "GET");
          send(response, callback, 200, livenessBody);
        }
        case "/readyz" -> {
          JsonInput.requireMethod(method, "GET");
          ready(response, callback);
        }
        case "/metrics" -> {
          JsonInput.requireMethod(method, "GET");
          response.setStatus(200);
          response.getHeaders().put(HttpHeader.CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
          Content.Sink.write(response, true, metrics.scrape(), callback);
        }
        default -> throw new ApiError(404, "not_found", "no route " + method + " " + path
            + "; routes: POST /v1/acquire, POST /v1/refund, POST /v1/settle, GET /v1/peek, GET /v1/policies, GET /healthz,"
            + " GET /readyz, GET /metrics");
      }
    } catch (Exception e) {
      fail(request, response, callback, e);
    } finally {
      if (timer != null) {
        timer.record(System.nanoTime() - start, java.util.concurrent.TimeUnit.NANOSECONDS);
      }
    }
    return true;
  }

  /**
   * An acquire on the limiter's asynchronous path: no thread waits for Redis or PostgreSQL, the
   * answer is written when the decision completes (within the store timeout, the failure mode's
   * otherwise). At most {@code maxPending} decisions are outstanding; past that the request is shed
   * at once with 503 {@code overloaded} and {@code Retry-After: 1}, instead of queueing into timeouts.
   */
  private void acquire(JsonNode body, Request request, Response response, Callback callback, long start) {
    Entry e = entry(JsonInput.requiredText(body, "policy"));
    String key = Inputs.key(JsonInput.requiredText(body, "key"));
    long permits = JsonInput.permits(body.get("permits"), e.policy());
    if (!pending.tryAcquire()) {
      response.getHeaders().put(HttpHeader.RETRY_AFTER, "1");
      throw new ApiError(503, "overloaded", "more than " + maxPending + " decisions are pending; retry after 1 second");
    }
    java.util.concurrent.CompletionStage<Decision> decision;
    try {
      decision = e.limiter().tryAcquireAsync(key, permits, e.policy());
    } catch (RuntimeException x) {
      pending.release();
      throw x;
    }
    // A decision from the store completes on its I/O thread (Lettuce's event loop: one per
    // connection, so one per policy). The answer (ticket HMAC, JSON, the HTTP write) goes to Jetty's
    // pool instead: written there, it made that one thread the service's bottleneck (docs/server.md).
    // The memory store decides at once: that answer is written on this thread.
    java.util.concurrent.Executor requestThreads =
        decision.toCompletableFuture().isDone() ? null : request.getComponents().getExecutor();
    decision.whenComplete((d, error) -> {
      pending.release();
      if (requestThreads == null) {
        respond(response, callback, e, key, start, d, error);
        return;
      }
      try {
        requestThreads.execute(() -> respond(response, callback, e, key, start, d, error));
      } catch (java.util.concurrent.RejectedExecutionException x) {
        respond(response, callback, e, key, start, d, error); // the pool is stopping or full: answer here rather than never
      }
    });
  }

  /** Answers a finished acquire: its decision, or a 500 when the limiter failed (it never should). */
  private void respond(Response response, Callback callback, Entry e, String key, long start, Decision d, Throwable error) {
    try {
      if (error != null) {
        LOG.log(System.Logger.Level.ERROR, "acquire for policy '" + e.policy().name() + "' failed", error);
        sendError(response, callback, 500, "internal", "internal error; the server log has the details");
      } else {
        answer(response, callback, e, key, d);
      }
    } catch (RuntimeException x) {
      callback.failed(x);
    } finally {
      acquireTimer.record(System.nanoTime() - start, java.util.concurrent.TimeUnit.NANOSECONDS);
    }
  }

  private void answer(Response response, Callback callback, Entry e, String key, Decision d) {
    long now = ticker.nowMicros();
    // A fallback's charge is in this instance's memory, which a signed ticket cannot name: restored,
    // it would refund into the shared store, which never counted it. Without a ticket the fallback
    // only stays stricter, as a limiter without refunds does.
    String ticket = d.path() == Path.FALLBACK ? null : d.ticket()
        .map(t -> tickets.encode(e.policy().name(), key, t.permits(), t.stamp(), now, t.id()))
        .orElse(null);
    HttpVerdict verdict = HttpVerdict.of(d, null, key, now, headers);
    if (verdict.allowed()) {
      putHeaders(response, verdict);
      send(response, callback, 200, decisionBody(verdict, ticket));
    } else {
      // A refusal counted nothing, so there is no ticket: the answer is the filters' own.
      sendRefusal(response, callback, verdict);
    }
  }

  /** A refusal as the HTTP filters send it: the verdict's status, headers and problem body. */
  private static void sendRefusal(Response response, Callback callback, HttpVerdict verdict) {
    putHeaders(response, verdict);
    send(response, callback, verdict.status(), HttpVerdict.PROBLEM_JSON, verdict.body());
  }

  private static void putHeaders(Response response, HttpVerdict verdict) {
    HttpFields.Mutable h = response.getHeaders();
    for (HttpVerdict.Header header : verdict.headers()) {
      h.put(header.name(), header.value());
    }
  }

  private void refund(JsonNode body, Response response, Callback callback) {
    TicketCodec.Claims c = tickets.decode(JsonInput.requiredText(body, "ticket"));
    Entry e = entryOf(c);
    Refused refused = spendOnce(c, e, "ticket expired: its permits have come back by themselves",
        "ticket was already refunded", "too many tickets refunded recently to remember another; refused to stay strict, retry later");
    Refund result;
    String detail;
    if (refused != null) {
      result = refused.failed() ? Refund.FAILED : Refund.NO_EFFECT;
      detail = refused.detail();
    } else {
      result = e.limiter().refund(ticketOf(e, c));
      detail = switch (result) {
        case APPLIED -> "permits returned";
        case NO_EFFECT -> "nothing to give back: the ticket was spent already, the window rolled or the bucket is full";
        case FAILED -> "the store could not be updated; the limiter stays stricter";
        case UNKNOWN -> "the store did not answer in time; the refund may have been applied";
      };
      if (result == Refund.FAILED || result == Refund.UNKNOWN) {
        // Not applied, or not known: the store recorded the ticket as spent in the step that applied
        // it (if it did), so a retry is the one application or no_effect; the client may retry.
        spent.unmark(c.ticketId());
      }
    }
    e.meters().refund(result);
    String out = write(g -> {
      g.writeStartObject();
      g.writeStringField("result", result.name().toLowerCase(java.util.Locale.ROOT));
      g.writeStringField("policy", c.policy());
      g.writeNumberField("permits", c.permits());
      g.writeStringField("detail", detail);
      g.writeEndObject();
    });
    send(response, callback, result == Refund.FAILED || result == Refund.UNKNOWN ? 503 : 200, out);
  }

  /**
   * Settles a ticket at its actual cost ({@link RateLimiter#settle}), once: like a refund, a ticket
   * settles within its life (after it the service no longer remembers spent tickets, so it cannot
   * tell a replay from a first settlement, and answers no_effect) and at most once, settle or refund.
   */
  private void settle(JsonNode body, Response response, Callback callback) {
    TicketCodec.Claims c = tickets.decode(JsonInput.requiredText(body, "ticket"));
    Entry e = entryOf(c);
    long actual = JsonInput.actual(body.get("actual"), e.policy());
    Refused refused = spendOnce(c, e, "ticket expired: settle within the ticket's life",
        "ticket was already settled or refunded", "too many tickets spent recently to remember another; retry later");
    Settlement result;
    String detail;
    if (refused != null) {
      result = refused.failed() ? Settlement.FAILED : Settlement.NO_EFFECT;
      detail = refused.detail();
    } else {
      result = e.limiter().settle(ticketOf(e, c), actual);
      detail = switch (result) {
        case APPLIED -> actual < c.permits() ? "unused permits returned" : "overrun charged";
        case NO_EFFECT -> "nothing changed: the ticket was spent already, the actual equals the reservation, or the window rolled"
            + " before the rest could go back";
        case FAILED -> "the store could not be updated; the reservation stays the charge";
        case UNKNOWN -> "the store did not answer in time; the settlement may have been applied";
      };
      if (result == Settlement.FAILED || result == Settlement.UNKNOWN) {
        spent.unmark(c.ticketId()); // as for a refund: the store's spent record keeps a retry to one application
      }
    }
    String out = write(g -> {
      g.writeStartObject();
      g.writeStringField("result", result.name().toLowerCase(java.util.Locale.ROOT));
      g.writeStringField("policy", c.policy());
      g.writeNumberField("permits", c.permits());
      g.writeNumberField("actual", actual);
      g.writeStringField("detail", detail);
      g.writeEndObject();
    });
    send(response, callback, result == Settlement.FAILED || result == Settlement.UNKNOWN ? 503 : 200, out);
  }

  /** The configured entry a ticket names; 400 when its policy is no longer configured. */
  private Entry entryOf(TicketCodec.Claims c) {
    Entry e = entries.get(c.policy());
    if (e == null) {
      throw new ApiError(400, "bad_request", "ticket names policy '" + c.policy() + "', which is not configured any more");
    }
    return e;
  }

  /** The limiter's own ticket for what a service ticket claims: what its refund or settlement spends. */
  private Ticket ticketOf(Entry e, TicketCodec.Claims c) {
    return store.issuer().restore(e.policy(), c.key(), c.permits(), c.stamp(), c.ticketId());
  }

  /** Why a ticket may not be spent now: {@code failed} (503, try again) or not (no effect, final). */
  private record Refused(boolean failed, String detail) {}

  /**
   * The once-per-ticket rule refunds and settlements share: a ticket spends within its life and at
   * most once (refund or settle), marked in the spent set before the limiter is asked. Returns null
   * when the caller may spend it now (it is marked: unmark it if the limiter then fails), else why not.
   */
  private Refused spendOnce(TicketCodec.Claims c, Entry e, String expired, String alreadySpent, String full) {
    long now = ticker.nowMicros();
    long expiresAt = c.issuedAtMicros() + e.ticketLifeMicros();
    if (now >= expiresAt) {
      return new Refused(false, expired);
    }
    return switch (spent.mark(c.ticketId(), expiresAt, now)) {
      case ALREADY_SPENT -> new Refused(false, alreadySpent);
      case FULL -> new Refused(true, full);
      case FAILED -> new Refused(true, "the store could not record the ticket as spent; refused to stay strict, retry later");
      case MARKED -> null;
    };
  }

  private void peek(Request request, Response response, Callback callback) {
    Fields q;
    try {
      q = Request.extractQueryParameters(request, StandardCharsets.UTF_8);
    } catch (RuntimeException e) {
      throw new ApiError(400, "bad_request", "query string is malformed; percent-encode each byte of UTF-8 (%XX) and keep '&' and '=' as separators");
    }
    Entry e = entry(JsonInput.requiredParam(q, "policy"));
    String key = Inputs.key(JsonInput.requiredParam(q, "key"));
    Decision d = e.limiter().peek(key, e.policy());
    long now = ticker.nowMicros();
    HttpVerdict verdict = HttpVerdict.of(d, null, key, now, headers);
    if (verdict.status() == HttpVerdict.SERVICE_UNAVAILABLE) {
      sendRefusal(response, callback, verdict);
      return;
    }
    // A peek reads the quota, it asks for nothing: 200 with the limit headers (none for a
    // failure-mode decision) and the decision's fields, whether one permit would fit or not.
    headers.allowed(d, null, key, now, response.getHeaders()::put);
    send(response, callback, 200, decisionBody(verdict, null));
  }

  /** Readiness: the store's last probe (at most one a second, never a decision); 503 while it does not answer. */
  private void ready(Response response, Callback callback) {
    Readiness.Status s = readiness.status();
    send(response, callback, s.ready() ? 200 : 503, write(g -> {
      g.writeStartObject();
      g.writeStringField("status", s.ready() ? "ready" : "not_ready");
      g.writeStringField("store", store.name());
      if (!s.ready()) {
        g.writeStringField("reason", s.reason());
      }
      g.writeEndObject();
    }));
  }

  /** The decision fields of a peek at {@code key} under {@code e}'s policy (what {@code GET /v1/peek} answers), for the admin API. */
  Map<String, Object> peekFields(Entry e, String key) {
    Decision d = e.limiter().peek(key, e.policy());
    return HttpVerdict.of(d, null, key, ticker.nowMicros(), headers).fields();
  }

  /** The verdict's decision fields, then the service's own: the refund ticket. */
  private String decisionBody(HttpVerdict verdict, String ticket) {
    return write(g -> {
      g.writeStartObject();
      for (Map.Entry<String, Object> f : verdict.fields().entrySet()) {
        // Typed writes: writeObjectField looks a serializer up per field (docs/server.md, issue 17.10).
        Object v = f.getValue();
        if (v instanceof String text) {
          g.writeStringField(f.getKey(), text);
        } else if (v instanceof Long n) {
          g.writeNumberField(f.getKey(), n);
        } else if (v instanceof Boolean b) {
          g.writeBooleanField(f.getKey(), b);
        } else {
          g.writeObjectField(f.getKey(), v);
        }
      }
      if (ticket != null) {
        g.writeStringField("ticket", ticket);
      }
      g.writeEndObject();
    });
  }

  private Entry entry(String name) {
    Entry e = entries.get(name);
    if (e == null) {
      throw new ApiError(400, "bad_request", "policy " + Inputs.quote(name) + " is not configured; configured policies: "
          + String.join(", ", entries.keySet().stream().sorted().limit(20).toList()));
    }
    return e;
  }

  /** An {@link ApiError} as its JSON answer; a 405 names the allowed method in {@code Allow}. */
  void sendError(Response response, Callback callback, ApiError e) {
    if (e.closes) {
      response.getHeaders().put(HttpHeader.CONNECTION, "close");
    }
    if (e.status == 405) {
      response.getHeaders().put(HttpHeader.ALLOW, e.code);
      sendError(response, callback, 405, "method_not_allowed", e.getMessage());
    } else {
      sendError(response, callback, e.status, e.code, e.getMessage());
    }
  }

  void sendError(Response response, Callback callback, int status, String code, String message) {
    send(response, callback, status, write(g -> {
      g.writeStartObject();
      g.writeStringField("error", code);
      g.writeStringField("message", message);
      g.writeEndObject();
    }));
  }

  static void send(Response response, Callback callback, int status, String body) {
    send(response, callback, status, JSON, body);
  }

  private static void send(Response response, Callback callback, int status, String contentType, String body) {
    response.setStatus(status);
    response.getHeaders().put(HttpHeader.CONTENT_TYPE, contentType);
    Content.Sink.write(response, true, body, callback);
  }

  @FunctionalInterface
  interface JsonWriter {
    void write(JsonGenerator g) throws IOException;
  }

  String write(JsonWriter w) {
    StringWriter out = new StringWriter(256);
    try (JsonGenerator g = json.createGenerator(out)) {
      g.setCodec(JsonInput.MAPPER);
      w.write(g);
    } catch (IOException e) {
      throw new IllegalStateException("writing JSON to a string failed", e);
    }
    return out.toString();
  }
}
