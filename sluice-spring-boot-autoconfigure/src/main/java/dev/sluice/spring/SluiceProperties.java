package dev.sluice.spring;

import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.kernel.FailureModeWords;
import dev.sluice.kernel.HeaderFamily;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Everything under {@code sluice.*}. The policies are entries of the service's policy-file shape;
 * the store is chosen once for all of them; HTTP rules say which requests are charged to which
 * policy under which key.
 */
@ConfigurationProperties("sluice")
public class SluiceProperties {
  /** Where budgets are kept. */
  public enum StoreType {
    /** In this process (the default): exact, fastest, not shared between instances. */
    MEMORY,
    /** Redis: the application's RedissonClient, else Spring Data Redis's Jedis or Lettuce connection factory, else sluice.redis.url. */
    REDIS,
    /** PostgreSQL through the application's DataSource. */
    JDBC
  }

  /** The policies, in the shape of sluice serve's policy file. */
  private List<PolicyEntry> policies = new ArrayList<>();
  /** The store every policy's limiter uses. */
  private StoreType store = StoreType.MEMORY;
  /** Deadline of one store call (redis, jdbc); null keeps the backend's default (Redis 100ms). */
  private Duration timeout;
  /**
   * What a failed store call decides (redis, jdbc): closed (refuse, a 503 over HTTP), open (allow, and
   * log a warning) or fallback (decide with an in-process limiter of the same policy until the store
   * answers again); any case.
   */
  private String failureMode = "closed";
  /** Most keys one policy's memory limiter tracks (the memory store, and the fallback's). */
  private int maxKeys = 10_000;
  /** Events kept for /actuator/ratelimitevents (decisions, refunds, settlements; never keys): 0 keeps none, at most 10000. */
  private int eventBufferSize = RateLimitEvents.DEFAULT_BUFFER;
  private final Redis redis = new Redis();
  private final Jdbc jdbc = new Jdbc();
  private final Http http = new Http();

  public List<PolicyEntry> getPolicies() { return policies; }

  public void setPolicies(List<PolicyEntry> policies) { this.policies = policies; }

  public StoreType getStore() { return store; }

  public void setStore(StoreType store) { this.store = store; }

  public Duration getTimeout() { return timeout; }

  public void setTimeout(Duration timeout) { this.timeout = timeout; }

  public String getFailureMode() { return failureMode; }

  public void setFailureMode(String failureMode) { this.failureMode = failureMode; }

  /**
   * {@code sluice.failure-mode} read through the one parser of the words ({@link FailureModeWords},
   * the service's too): each policy's failure mode; open logs each admission at WARNING, fallback
   * tracks at most {@code sluice.max-keys} keys.
   */
  Function<Policy, FailureMode> failureModes() {
    return FailureModeWords.parse("sluice.failure-mode", failureMode, (p, reason, cause) ->
        System.getLogger(SluiceProperties.class.getName()).log(System.Logger.Level.WARNING, "rate-limit store failed for policy '"
            + p.name() + "' (" + reason + "); allowing under sluice.failure-mode=open", cause), maxKeys);
  }

  public int getMaxKeys() { return maxKeys; }

  public int getEventBufferSize() { return eventBufferSize; }

  public void setEventBufferSize(int eventBufferSize) { this.eventBufferSize = eventBufferSize; }

  public void setMaxKeys(int maxKeys) { this.maxKeys = maxKeys; }

  public Redis getRedis() { return redis; }

  public Jdbc getJdbc() { return jdbc; }

  public Http getHttp() { return http; }

  /** sluice.redis.*: used when the application has no Redis client Sluice can use. */
  public static class Redis {
    /** A redis:// URI, used when the application has no RedissonClient or Spring Data Redis connection factory. */
    private String url = "redis://127.0.0.1:6379";

    public String getUrl() { return url; }

    public void setUrl(String url) { this.url = url; }
  }

  /** sluice.jdbc.*: the PostgreSQL store on the application's DataSource. */
  public static class Jdbc {
    /** The table budgets are kept in. */
    private String table = "sluice_rate_limit";
    /** Create the table (CREATE TABLE IF NOT EXISTS) at start-up. */
    private boolean applySchema;

    public String getTable() { return table; }

    public void setTable(String table) { this.table = table; }

    public boolean isApplySchema() { return applySchema; }

    public void setApplySchema(boolean applySchema) { this.applySchema = applySchema; }
  }

  /** sluice.http.*: the servlet filter (Spring MVC) or WebFilter (WebFlux). */
  public static class Http {
    /** Install the filter when there are rules. */
    private boolean enabled = true;
    /**
     * The filter's order: early by default (before Spring Security, whose filters are at -100); give
     * a higher number (0) for keys on the authenticated principal.
     */
    private int order = SluiceWebFilter.ORDER;
    /** Proxies (CIDR blocks) whose X-Forwarded-For is believed by the key's remoteAddress. */
    private List<String> trustedProxies = new ArrayList<>();
    /**
     * Which of the rules matching a request charge it: first (the default: the first rule whose
     * patterns, methods and conditions match) or all (every one of them, all or nothing: a refusal by
     * any leaves none charged). Requests no rule matches pass.
     */
    private Strategy strategy = Strategy.FIRST;
    /** The rules, in order. */
    private List<Rule> rules = new ArrayList<>();
    /** The answer to a refusal (429) of every rule that has no response of its own; RFC 9457 when unset. */
    private Response response = new Response();
    private final Metrics metrics = new Metrics();

    public Metrics getMetrics() { return metrics; }

    public boolean isEnabled() { return enabled; }

    public void setEnabled(boolean enabled) { this.enabled = enabled; }

    public int getOrder() { return order; }

    public void setOrder(int order) { this.order = order; }

    public List<String> getTrustedProxies() { return trustedProxies; }

    public void setTrustedProxies(List<String> trustedProxies) { this.trustedProxies = trustedProxies; }

    public Strategy getStrategy() { return strategy; }

    public void setStrategy(Strategy strategy) { this.strategy = strategy; }

    public List<Rule> getRules() { return rules; }

    public void setRules(List<Rule> rules) { this.rules = rules; }

    public Response getResponse() { return response; }

    public void setResponse(Response response) { this.response = response; }
  }

  /** sluice.http.metrics.*: the counter sluice.http.requests. */
  public static class Metrics {
    /**
     * Tags of sluice.http.requests (besides policy and outcome), each a SpEL expression over the
     * request with a cap on its distinct values; past it, values are counted as _other.
     */
    private List<MetricTag> tags = new ArrayList<>();

    public List<MetricTag> getTags() { return tags; }

    public void setTags(List<MetricTag> tags) { this.tags = tags; }
  }

  /** One tag of sluice.http.requests. */
  public static class MetricTag {
    /** The tag's name, such as plan. */
    private String name;
    /** SpEL over the request (header('X-Plan'), query('p'), method, path, principal, beans) giving the tag's value; none when null. */
    private String expression;
    /** Most distinct values, 1 to 10,000; later new values are counted as _other. */
    private int maxValues = HttpTags.DEFAULT_MAX_VALUES;

    public String getName() { return name; }

    public void setName(String name) { this.name = name; }

    public String getExpression() { return expression; }

    public void setExpression(String expression) { this.expression = expression; }

    public int getMaxValues() { return maxValues; }

    public void setMaxValues(int maxValues) { this.maxValues = maxValues; }
  }

  /** sluice.http.strategy: which of the matching rules charge a request. */
  public enum Strategy {
    /** The first matching rule (patterns, methods, conditions, key) charges the request. */
    FIRST,
    /** Every matching rule charges the request, all or nothing (bucket4j's several filters on one URL). */
    ALL
  }

  /**
   * The answer to a request refused over a limit (429): bucket4j's http-status-code,
   * http-content-type, http-response-body and http-response-headers. Unset fields keep the verdict's
   * (429, application/problem+json, its RFC 9457 body); the verdict's Retry-After and limit headers
   * are always sent. An outage (503) is always the verdict's.
   */
  public static class Response {
    /** The status of a refusal, 400 to 599; 429 when unset. */
    private Integer status;
    /** The Content-Type of a refusal; application/problem+json when unset (text/plain when only body is given). */
    private String contentType;
    /** The body of a refusal, sent as given (UTF-8); the RFC 9457 problem when unset. */
    private String body;
    /** Headers added to a refusal, after the verdict's. */
    private java.util.Map<String, String> headers = new java.util.LinkedHashMap<>();

    public Integer getStatus() { return status; }

    public void setStatus(Integer status) { this.status = status; }

    public String getContentType() { return contentType; }

    public void setContentType(String contentType) { this.contentType = contentType; }

    public String getBody() { return body; }

    public void setBody(String body) { this.body = body; }

    public java.util.Map<String, String> getHeaders() { return headers; }

    public void setHeaders(java.util.Map<String, String> headers) { this.headers = headers; }

    boolean isSet() {
      return status != null || contentType != null || body != null || (headers != null && !headers.isEmpty());
    }
  }

  /** One HTTP rule. */
  public static class Rule {
    /** Path patterns (Spring PathPattern syntax: /api/**, /users/{id}); empty matches every path. */
    private List<String> patterns = new ArrayList<>();
    /** HTTP methods (GET, POST, ...); empty matches every method. */
    private List<String> methods = new ArrayList<>();
    /** The policy requests are charged to (a name from sluice.policies); or give policies. With policy-expression, its fallback. */
    private String policy;
    /**
     * Several policies every request is charged to, all or nothing (bucket4j's several bandwidths):
     * a refusal by any leaves none charged. Instead of policy.
     */
    private List<String> policies = new ArrayList<>();
    /**
     * SpEL over the request (as execute-condition) answering the name of the policy of sluice.policies
     * a request is charged to, e.g. a plan looked up from the tenant: @plans.of(header('X-Tenant')).
     * policy is its fallback: it decides a request the expression fails on, answers null for or names
     * no configured policy for. A budget is a policy's name and a key.
     */
    private String policyExpression;
    /**
     * SpEL over the request: the rule charges only the requests it is true for. header('X-Plan'),
     * query('page'), method, path, principal, remoteAddress and beans (@plans.isFree(header('X-Plan'))).
     */
    private String executeCondition;
    /** SpEL over the request, as execute-condition: the rule skips the requests it is true for. */
    private String skipCondition;
    /**
     * Skip a request whose key is null or blank (bucket4j's behaviour) instead of charging it to the
     * one shared key 'unknown' (the default: a request without an identity cannot escape the limit).
     */
    private boolean skipWhenNoKey;
    /**
     * SpEL over the response, evaluated once the handler answered: give the permits back when true.
     * getStatus() (or status; 500 when the handler threw) and header('Name'): "status == 401",
     * "getStatus() ge 500". Instead of skip-on-success / skip-on-failure.
     */
    private String refundCondition;
    /** This rule's answer to a refusal, field by field over sluice.http.response. */
    private Response response = new Response();
    /**
     * The key, a SpEL expression over the request: remoteAddress (through trusted-proxies),
     * header('X-Api-Key'), principal, method, path, and beans (@tenants.of(header('X-Tenant'))).
     */
    private String key = "remoteAddress";
    /** Permits per request. */
    private long permits = 1;
    /** Give the permits back when the handler answers below 400 (only failures count: a login form). */
    private boolean skipOnSuccess;
    /** Give the permits back when the handler throws or answers 5xx. */
    private boolean skipOnFailure;
    /**
     * Which limit header families to send, the words of every front end: ietf, legacy, all, none (a
     * list is their union); Retry-After is always sent on a refusal.
     */
    private List<HeaderFamily> headers = new ArrayList<>(List.of(HeaderFamily.IETF, HeaderFamily.LEGACY));

    public List<String> getPatterns() { return patterns; }

    public void setPatterns(List<String> patterns) { this.patterns = patterns; }

    public List<String> getMethods() { return methods; }

    public void setMethods(List<String> methods) { this.methods = methods; }

    public String getPolicy() { return policy; }

    public void setPolicy(String policy) { this.policy = policy; }

    public List<String> getPolicies() { return policies; }

    public void setPolicies(List<String> policies) { this.policies = policies; }

    public String getPolicyExpression() { return policyExpression; }

    public void setPolicyExpression(String policyExpression) { this.policyExpression = policyExpression; }

    public String getExecuteCondition() { return executeCondition; }

    public void setExecuteCondition(String executeCondition) { this.executeCondition = executeCondition; }

    public String getSkipCondition() { return skipCondition; }

    public void setSkipCondition(String skipCondition) { this.skipCondition = skipCondition; }

    public boolean isSkipWhenNoKey() { return skipWhenNoKey; }

    public void setSkipWhenNoKey(boolean skipWhenNoKey) { this.skipWhenNoKey = skipWhenNoKey; }

    public String getRefundCondition() { return refundCondition; }

    public void setRefundCondition(String refundCondition) { this.refundCondition = refundCondition; }

    public Response getResponse() { return response; }

    public void setResponse(Response response) { this.response = response; }

    public String getKey() { return key; }

    public void setKey(String key) { this.key = key; }

    public long getPermits() { return permits; }

    public void setPermits(long permits) { this.permits = permits; }

    public boolean isSkipOnSuccess() { return skipOnSuccess; }

    public void setSkipOnSuccess(boolean skipOnSuccess) { this.skipOnSuccess = skipOnSuccess; }

    public boolean isSkipOnFailure() { return skipOnFailure; }

    public void setSkipOnFailure(boolean skipOnFailure) { this.skipOnFailure = skipOnFailure; }

    public List<HeaderFamily> getHeaders() { return headers; }

    public void setHeaders(List<HeaderFamily> headers) { this.headers = headers; }
  }
}
