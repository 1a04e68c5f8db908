package dev.sluice.spring;

import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.kernel.DecisionWords;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The last {@code sluice.event-buffer-size} events of every policy's limiter (decisions, refunds,
 * settlements), for {@code /actuator/ratelimitevents} (Resilience4j's {@code ratelimiterevents}). A
 * ring written without a lock: one small record per event, the oldest overwritten. Keys are never
 * kept (a key is a person's address or account; the events say what happened, not to whom).
 */
final class RateLimitEvents implements RateLimitListener {
  /** Events kept unless {@code sluice.event-buffer-size} says otherwise. */
  static final int DEFAULT_BUFFER = 100;
  /** Most events kept. */
  static final int MOST_BUFFER = 10_000;

  /** One event; {@code type} is allowed, refused, failed (a decision the store did not make), refund or settle. */
  record Event(long seq, String policy, String type, String reason, String path, String outcome, Instant at) {
    Map<String, Object> fields() {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("policy", policy);
      m.put("type", type);
      if (reason != null) {
        m.put("reason", reason);
      }
      if (path != null) {
        m.put("path", path);
      }
      if (outcome != null) {
        m.put("outcome", outcome);
      }
      m.put("time", at.toString());
      return m;
    }
  }

  private final AtomicReferenceArray<Event> ring;
  private final AtomicLong next = new AtomicLong();
  private final RateLimitListener then;
  private final Clock clock;

  RateLimitEvents(int size, RateLimitListener then, Clock clock) {
    this.ring = new AtomicReferenceArray<>(size);
    this.then = then;
    this.clock = clock;
  }

  /** {@code sluice.event-buffer-size} checked: 0 keeps no events, up to {@value #MOST_BUFFER}. */
  static int size(int configured) {
    if (configured < 0 || configured > MOST_BUFFER) {
      throw new IllegalArgumentException("sluice.event-buffer-size is " + configured + "; give 0 (no events kept) to "
          + MOST_BUFFER);
    }
    return configured;
  }

  /** Whether it keeps any event ({@code sluice.event-buffer-size} above 0). */
  boolean keeps() {
    return ring.length() > 0;
  }

  private void add(String policy, String type, String reason, String path, String outcome) {
    if (ring.length() == 0) {
      return;
    }
    long seq = next.getAndIncrement();
    ring.set((int) (seq % ring.length()), new Event(seq, policy, type, reason, path, outcome, clock.instant()));
  }

  @Override public void onDecision(Decision d, String key) {
    String type = d.reason().isFailure() ? "failed" : d.allowed() ? "allowed" : "refused";
    add(d.policy().name(), type, DecisionWords.of(d.reason()), DecisionWords.of(d.path()), null);
    then.onDecision(d, key);
  }

  @Override public void onRefusal(Decision d, String key) {
    then.onRefusal(d, key);
  }

  @Override public void onRefund(Policy policy, Refund result) {
    add(policy.name(), "refund", null, null, result.name().toLowerCase(java.util.Locale.ROOT));
    then.onRefund(policy, result);
  }

  @Override public void onSettle(Policy policy, Settlement result) {
    add(policy.name(), "settle", null, null, result.name().toLowerCase(java.util.Locale.ROOT));
    then.onSettle(policy, result);
  }

  @Override public void onStoreCall(Policy policy, long latencyNanos, Throwable error) {
    then.onStoreCall(policy, latencyNanos, error);
  }

  /** The events kept, oldest first; of {@code policy} only when it is not null. */
  List<Event> events(String policy) {
    List<Event> out = new ArrayList<>(ring.length());
    for (int i = 0; i < ring.length(); i++) {
      Event e = ring.get(i);
      if (e != null && (policy == null || e.policy().equals(policy))) {
        out.add(e);
      }
    }
    out.sort(Comparator.comparingLong(Event::seq));
    return out;
  }
}
