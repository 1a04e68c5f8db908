package dev.sluice.http;

import dev.sluice.Decision;
import java.util.function.BiConsumer;

/** One request's verdict and, after the handler ran, its refunds. Not thread-safe beyond {@link #complete}. */
final class Admission {
  private final HttpRateLimit config;
  final HttpVerdict verdict;
  private final Decision primary;
  private final Decision ceiling;
  private boolean completed;

  Admission(HttpRateLimit config, HttpVerdict verdict, Decision primary, Decision ceiling) {
    this.config = config;
    this.verdict = verdict;
    this.primary = primary;
    this.ceiling = ceiling;
  }

  /** Sets the response headers of the verdict. */
  void headers(BiConsumer<String, String> out) {
    for (HttpVerdict.Header h : verdict.headers()) {
      out.accept(h.name(), h.value());
    }
  }

  /**
   * The handler finished: it threw ({@code threw}) or answered {@code status} (negative when unknown).
   * Refunds under skipFailedRequests / skipSuccessfulRequests. Runs once.
   */
  synchronized void complete(boolean threw, int status) {
    if (completed || !verdict.allowed()) {
      return;
    }
    completed = true;
    if (config.refunds(threw, status)) {
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
