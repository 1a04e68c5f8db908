package dev.sluice.spring;

import java.util.function.Function;

/**
 * The root object of an HTTP rule's {@code refund-condition}: the handler's answer. A handler that
 * threw is seen as status 500. The methods are public for SpEL.
 */
final class RuleResponse {
  private final int status;
  private final Function<String, String> headers;

  RuleResponse(int status, Function<String, String> headers) {
    this.status = status;
    this.headers = headers;
  }

  /** The response status (500 when the handler threw). */
  public int getStatus() {
    return status;
  }

  /** The first value of response header {@code name}, or null. */
  public String header(String name) {
    return headers.apply(name);
  }
}
