package dev.sluice.spring;

import dev.sluice.Ticker;
import dev.sluice.guard.RateLimitExceededException;
import dev.sluice.http.HttpVerdict;
import dev.sluice.http.RateLimitHeaders;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.bind.annotation.ExceptionHandler;

/**
 * Answers a {@link RateLimitExceededException} thrown by a controller (a {@link RateLimited}
 * refusal without a fallback, or the guard's) with its {@link HttpVerdict}: 429 or 503, the limit
 * headers, the problem body. The same advice serves Spring MVC and WebFlux.
 */
@ControllerAdvice
@Order(Ordered.HIGHEST_PRECEDENCE)
public class RateLimitExceededHandler {
  /** The verdict of {@code refusal} as a response. */
  @ExceptionHandler(RateLimitExceededException.class)
  public ResponseEntity<byte[]> refused(RateLimitExceededException refusal) {
    HttpVerdict v = HttpVerdict.of(refusal, Ticker.system().nowMicros(), RateLimitHeaders.all());
    HttpHeaders headers = new HttpHeaders();
    for (HttpVerdict.Header h : v.headers()) {
      headers.set(h.name(), h.value());
    }
    headers.setContentType(MediaType.valueOf(HttpVerdict.PROBLEM_JSON));
    return ResponseEntity.status(v.status()).headers(headers).body(v.bodyBytes());
  }
}
