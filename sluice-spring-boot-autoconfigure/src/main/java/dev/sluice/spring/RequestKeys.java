package dev.sluice.spring;

import dev.sluice.http.KeyResolver;
import dev.sluice.http.RequestView;
import java.security.Principal;

/**
 * The root object of an HTTP rule's {@code key} expression: what a request offers to name its
 * client. {@code remoteAddress} goes through the trusted-proxy rule of {@code sluice-http}
 * ({@link KeyResolver#forwardedFor}); everything else is as sent.
 *
 * <pre>{@code
 * key: remoteAddress                                  # ip:203.0.113.7 (X-Forwarded-For only behind sluice.http.trusted-proxies)
 * key: "header('X-Api-Key') ?: remoteAddress"         # the API key, else the address
 * key: "principal ?: remoteAddress"                   # the authenticated user's name, else the address
 * key: "@tenants.of(header('X-Tenant'))"              # a bean's method
 * }</pre>
 */
public final class RequestKeys {
  private final RequestView request;
  private final KeyResolver address;

  RequestKeys(RequestView request, KeyResolver address) {
    this.request = request;
    this.address = address;
  }

  /** The client's address as a key ({@code ip:203.0.113.7}), through the trusted proxies; null when unknown. */
  public String getRemoteAddress() {
    return address.resolve(request);
  }

  /** The first value of header {@code name}, or null. */
  public String header(String name) {
    return request.header(name);
  }

  /** The authenticated principal's name, or null. */
  public String getPrincipal() {
    Principal p = request.principal();
    return p == null ? null : p.getName();
  }

  /** The request method, e.g. {@code GET}. */
  public String getMethod() {
    return request.method();
  }

  /** The request path, as sent. */
  public String getPath() {
    return request.path();
  }
}
