package dev.sluice.spring;

import dev.sluice.Decision;
import dev.sluice.Path;
import dev.sluice.RateLimiter;
import dev.sluice.http.HttpVerdict;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The shared store's health, with no Spring Boot type in it: Boot 3.5 ({@link StoreHealthIndicator})
 * and Boot 4 ({@link Boot4StoreHealthIndicator}) keep their health API in different packages, and
 * each only reports what this decides. A peek (never a charge) on a key of its own through the first
 * policy's limiter; down only when the store could not answer (the peek was decided by the failure
 * mode or the fallback); a key at its limit is the store working, not failing.
 */
record StoreProbe(boolean up, Map<String, Object> details) {
  /** The key peeked at. */
  static final String KEY = "sluice-health-probe";

  static StoreProbe check(RateLimiterRegistry registry) {
    Map<String, Object> details = new LinkedHashMap<>();
    details.put("store", registry.store());
    if (registry.limiters().isEmpty()) {
      return new StoreProbe(true, details);
    }
    RateLimiter l = registry.limiters().values().iterator().next();
    Decision d = l.peek(KEY, l.policy());
    if (d.path() == Path.PRIMARY) {
      return new StoreProbe(true, details);
    }
    details.put("reason", HttpVerdict.code(d.reason()));
    details.put("path", HttpVerdict.code(d.path()));
    return new StoreProbe(false, details);
  }
}
