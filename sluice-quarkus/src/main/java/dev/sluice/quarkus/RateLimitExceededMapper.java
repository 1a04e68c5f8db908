package dev.sluice.quarkus;

import dev.sluice.Ticker;
import dev.sluice.guard.RateLimitExceededException;
import dev.sluice.http.HttpVerdict;
import dev.sluice.http.RateLimitHeaders;
import jakarta.inject.Inject;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.ext.ExceptionMapper;
import jakarta.ws.rs.ext.Provider;

/**
 * Answers a {@link RateLimitExceededException} (a {@link RateLimited} refusal, or the guard's) with
 * its {@link HttpVerdict}: 429 or 503, {@code Retry-After} and the limit headers, the RFC 9457 body.
 * Registered by the extension when the application has Quarkus REST.
 */
@Provider
public class RateLimitExceededMapper implements ExceptionMapper<RateLimitExceededException> {
  @Inject
  Sluice sluice;

  @Override public Response toResponse(RateLimitExceededException refusal) {
    Ticker clock = sluice != null ? sluice.ticker() : Ticker.system();
    return response(HttpVerdict.of(refusal, clock.nowMicros(), RateLimitHeaders.all()));
  }

  /** {@code verdict} as a JAX-RS response, as it is. */
  static Response response(HttpVerdict verdict) {
    Response.ResponseBuilder b = Response.status(verdict.status());
    for (HttpVerdict.Header h : verdict.headers()) {
      b.header(h.name(), h.value());
    }
    return b.type(HttpVerdict.PROBLEM_JSON).entity(verdict.body()).build();
  }
}
