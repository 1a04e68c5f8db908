package dev.sluice.http;

import java.security.Principal;
import java.util.List;

/**
 * The parts of an HTTP request a {@link KeyResolver} may read, the same for a servlet request and a
 * JDK {@code HttpExchange}.
 */
public interface RequestView {
  /** The address of the connecting peer as an IP literal, or null when unknown. */
  String remoteAddress();

  /** The first value of header {@code name} (case-insensitive), or null. */
  String header(String name);

  /** Every value of header {@code name} in the order received, one entry per header line; empty when absent. */
  List<String> headers(String name);

  /** The authenticated principal, or null. */
  Principal principal();

  /** The request method, e.g. {@code GET}. */
  String method();

  /** The request path without the query string, as sent (not decoded). */
  String path();
}
