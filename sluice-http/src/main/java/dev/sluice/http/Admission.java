package dev.sluice.http;

import dev.sluice.Decision;
import java.nio.charset.StandardCharsets;
import java.util.function.BiConsumer;

/** One request's decisions and, after the handler ran, its refunds. Not thread-safe beyond {@link #complete}. */
final class Admission {
  static final int PASS = 0;
  static final int REFUSED = 429;
  static final int UNAVAILABLE = 503;

  private final HttpRateLimit config;
  /** {@link #PASS}, {@link #REFUSED} or {@link #UNAVAILABLE}. */
  final int verdict;
  private final Decision primary;
  private final Decision ceiling;
  private final Decision refusal;
  private boolean completed;

  Admission(HttpRateLimit config, int verdict, Decision primary, Decision ceiling, Decision refusal) {
    this.config = config;
    this.verdict = verdict;
    this.primary = primary;
    this.ceiling = ceiling;
    this.refusal = refusal;
  }

  /** Sets the response headers of this verdict. */
  void headers(BiConsumer<String, String> out) {
    long now = config.ticker.nowMicros();
    switch (verdict) {
      case PASS -> config.headers.allowed(primary, ceiling, now, out);
      case REFUSED -> config.headers.refused(refusal, now, out);
      default -> config.headers.unavailable(refusal, out);
    }
  }

  /** The problem+json body of a 429 or 503. */
  byte[] body() {
    String json = verdict == REFUSED ? RateLimitHeaders.tooManyRequestsBody(refusal) : RateLimitHeaders.unavailableBody(refusal);
    return json.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * The handler finished: it threw ({@code threw}) or answered {@code status} (negative when unknown).
   * Refunds under skipFailedRequests / skipSuccessfulRequests. Runs once.
   */
  synchronized void complete(boolean threw, int status) {
    if (completed || verdict != PASS) {
      return;
    }
    completed = true;
    boolean failed = threw || status >= 500;
    boolean succeeded = !threw && status > 0 && status < 400;
    if ((config.skipFailed && failed) || (config.skipSuccessful && succeeded)) {
      primary.ticket().ifPresent(config.limiter::refund);
      if (ceiling != null) {
        ceiling.ticket().ifPresent(config.ceilingLimiter::refund);
      }
    }
  }

  boolean refundsPossible() {
    return config.skipFailed || config.skipSuccessful;
  }
}
