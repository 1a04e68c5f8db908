package dev.sluice.quarkus;

import dev.sluice.http.HttpVerdict;
import io.vertx.core.http.HttpServerResponse;

/** Writes an {@link HttpVerdict} as it is: the one rendering of every front end, never a second one. */
final class Responses {
  private Responses() {}

  /** Sets the verdict's headers; on a refusal also its status and problem body, and ends the response. */
  static void write(HttpVerdict verdict, HttpServerResponse response) {
    for (HttpVerdict.Header h : verdict.headers()) {
      response.putHeader(h.name(), h.value());
    }
    if (!verdict.allowed()) {
      response.setStatusCode(verdict.status());
      response.putHeader("Content-Type", HttpVerdict.PROBLEM_JSON);
      response.end(verdict.body());
    }
  }
}
