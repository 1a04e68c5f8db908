package dev.sluice.spring;

import dev.sluice.Decision;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.http.HttpRateLimit;
import dev.sluice.http.HttpVerdict;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.kernel.PolicyWords;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;

/**
 * {@code /actuator/ratelimits}: the policies (as written in {@code sluice.policies}), the store and
 * per-policy counts of decisions; {@code /actuator/ratelimits/{policy}/{key}} peeks at one key's
 * budget without charging it. Read-only.
 */
@Endpoint(id = "ratelimits")
public class RateLimitsEndpoint {
  private final RateLimiterRegistry registry;

  RateLimitsEndpoint(RateLimiterRegistry registry) {
    this.registry = registry;
  }

  /** Store, then each policy with its counts. */
  @ReadOperation
  public Map<String, Object> ratelimits() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("store", registry.store());
    List<Map<String, Object>> policies = new ArrayList<>();
    for (RateLimiter l : registry.limiters().values()) {
      Map<String, Object> p = new LinkedHashMap<>(PolicyWords.describe(registry.current(l)));
      p.put("decisions", registry.counts(l.policy().name()));
      policies.add(p);
    }
    m.put("policies", policies);
    return m;
  }

  /** The decision fields a charge of one permit on {@code key} would get now; nothing is charged. */
  @ReadOperation
  public Map<String, Object> peek(@Selector String policy, @Selector String key) {
    RateLimiter l;
    try {
      l = registry.limiter(policy);
    } catch (IllegalArgumentException e) {
      throw new InvalidEndpointRequestException(e.getMessage(), "unknown policy");
    }
    Decision d = l.peek(HttpRateLimit.normalize(key), registry.current(l));
    return HttpVerdict.of(d, Ticker.system().nowMicros(), RateLimitHeaders.all()).fields();
  }
}
