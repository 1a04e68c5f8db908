package dev.sluice.spring;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;

/**
 * {@code /actuator/ratelimitevents}: the last {@code sluice.event-buffer-size} events of every
 * policy (allowed, refused, failed, refund, settle), oldest first, with the reason and path words of
 * every answer and the time; {@code /actuator/ratelimitevents/{policy}} those of one policy. The
 * counterpart of Resilience4j's {@code ratelimiterevents}. Keys are never shown. Read-only.
 */
@Endpoint(id = "ratelimitevents")
public class RateLimitEventsEndpoint {
  private final RateLimitEvents events;
  private final RateLimiterRegistry registry;

  RateLimitEventsEndpoint(RateLimitEvents events, RateLimiterRegistry registry) {
    this.events = events;
    this.registry = registry;
  }

  /** Every policy's events, oldest first. */
  @ReadOperation
  public Map<String, Object> events() {
    return body(null);
  }

  /** One policy's events, oldest first; an unknown policy is a 400 naming the configured ones. */
  @ReadOperation
  public Map<String, Object> events(@Selector String policy) {
    try {
      registry.limiter(policy);
    } catch (IllegalArgumentException e) {
      throw new org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException(e.getMessage(), "unknown policy");
    }
    return body(policy);
  }

  private Map<String, Object> body(String policy) {
    Map<String, Object> m = new LinkedHashMap<>();
    List<Map<String, Object>> list = events.events(policy).stream().map(RateLimitEvents.Event::fields).toList();
    m.put("events", list);
    return m;
  }
}
