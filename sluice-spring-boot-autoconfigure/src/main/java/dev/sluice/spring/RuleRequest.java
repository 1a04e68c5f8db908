package dev.sluice.spring;

import dev.sluice.http.KeyResolver;
import dev.sluice.http.RequestView;
import dev.sluice.kernel.Keys;
import java.security.Principal;
import java.util.List;
import java.util.function.Function;

/**
 * The root object of an HTTP rule's {@code execute-condition} and {@code skip-condition}: the
 * request's values as sent (no key namespaces: a condition compares them, it charges nothing).
 * {@code remoteAddress} goes through the trusted proxies as the key's does. The methods are public
 * for SpEL; the type is the starter's own.
 */
final class RuleRequest {
  private final RequestView request;
  private final Function<String, String> query;
  private final KeyResolver address;

  RuleRequest(RequestView request, Function<String, String> query, KeyResolver address) {
    this.request = request;
    this.query = query;
    this.address = address;
  }

  /** The first value of header {@code name}, or null. */
  public String header(String name) {
    return request.header(name);
  }

  /** Every value of header {@code name}; empty when absent. */
  public List<String> headers(String name) {
    return request.headers(name);
  }

  /** The first value of query parameter {@code name} (decoded), or null. */
  public String query(String name) {
    return query.apply(name);
  }

  /** The request method, e.g. {@code GET}. */
  public String getMethod() {
    return request.method();
  }

  /** The request path without the query string, as sent. */
  public String getPath() {
    return request.path();
  }

  /** The authenticated principal's name, or null. */
  public String getPrincipal() {
    Principal p = request.principal();
    return p == null ? null : p.getName();
  }

  /** The client's address (through the trusted proxies), or null. */
  public String getRemoteAddress() {
    String key = address.resolve(request);
    String prefix = Keys.IP + ":";
    return key != null && key.startsWith(prefix) ? key.substring(prefix.length()) : key;
  }
}
