package dev.sluice.spring;

import dev.sluice.RateLimiter;
import dev.sluice.kernel.Readiness;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The shared store's health, with no Spring Boot type in it: Boot 3.5 ({@link StoreHealthIndicator})
 * and Boot 4 ({@link Boot4StoreHealthIndicator}) keep their health API in different packages, and
 * each only reports what this says. The kernel's {@link Readiness#peek} decides, through the first
 * policy's limiter on a key of its own: a peek, never a charge; down only when the store could not
 * answer; a key at its limit is the store working, not failing.
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
    Readiness.Status s = Readiness.peek(l, KEY);
    if (!s.ready()) {
      details.put("reason", s.reason());
      details.put("path", s.path());
    }
    return new StoreProbe(s.ready(), details);
  }
}
