package dev.sluice.spring;

import dev.sluice.http.KeyResolver;
import dev.sluice.http.RequestView;
import dev.sluice.kernel.Keys;
import java.security.Principal;
import java.util.Arrays;

/**
 * The root object of an HTTP rule's {@code key} expression: what a request offers to name its
 * client. {@code remoteAddress} goes through the trusted-proxy rule of {@code sluice-http}
 * ({@link KeyResolver#forwardedFor}); everything else is as sent.
 *
 * <pre>{@code
 * key: remoteAddress                                  # ip:203.0.113.7 (X-Forwarded-For only behind sluice.http.trusted-proxies)
 * key: "header('X-Api-Key') ?: remoteAddress"         # header:x-api-key:<the key>, else the address
 * key: "principal ?: remoteAddress"                   # user:<name>, else the address
 * key: "@tenants.of(header('X-Tenant'))"              # value:<what the bean returned>
 * key: "join(principal, path)"                        # user:<name>|path:<path>
 * }</pre>
 *
 * <p><b>Namespaces.</b> The expression's result is charged under a key namespaced by where it came
 * from ({@link #keyOf}), so that no value a client sends can equal another source's key: a value
 * one of these accessors returned, as it is, is that source's ({@code ip:}, {@code header:<name>:},
 * {@code user:}, {@code method:}, {@code path:}); anything else, a literal or a string computed from
 * them, is {@code value:<string>}. The accessors return the values themselves, so an expression can
 * compare, concatenate or pass them to a bean as before; {@link #join} composes two sources and
 * keeps both apart. One object per evaluation.
 */
public final class RequestKeys {
  private final RequestView request;
  private final KeyResolver address;
  /** The values handed out so far, with the keys they stand for: a few per evaluation, compared by identity. */
  private Object[] handed;
  private String[] keys;
  private int count;

  RequestKeys(RequestView request, KeyResolver address) {
    this.request = request;
    this.address = address;
  }

  /** The client's address as a key ({@code ip:203.0.113.7}), through the trusted proxies; null when unknown. */
  public String getRemoteAddress() {
    String key = address.resolve(request);
    return handOut(key, key);
  }

  /** The first value of header {@code name}, stripped; null when absent or blank. */
  public String header(String name) {
    String v = request.header(name);
    return handOut(v == null ? null : v.strip(), Keys.header(name, v));
  }

  /** The authenticated principal's name, or null. */
  public String getPrincipal() {
    Principal p = request.principal();
    String name = p == null ? null : p.getName();
    return handOut(name, Keys.key(Keys.USER, name));
  }

  /** The request method, e.g. {@code GET}. */
  public String getMethod() {
    String m = request.method();
    return handOut(m, Keys.key(Keys.METHOD, m));
  }

  /** The request path, as sent. */
  public String getPath() {
    String p = request.path();
    return handOut(p, Keys.key(Keys.PATH, p));
  }

  /**
   * Both values' keys joined ({@code join(principal, path)}: {@code user:alice|path:/export}), as
   * {@code KeyResolver.and} joins them: each keeps its source, and two different pairs never give
   * one key, where a concatenation ({@code principal + path}) is one computed value. Null when
   * either has no key.
   */
  public String join(Object first, Object second) {
    String a = keyOf(first);
    String b = a == null ? null : keyOf(second);
    String joined = b == null ? null : Keys.join(a, b);
    return handOut(joined, joined);
  }

  /**
   * The key of the expression's {@code result}: the source's key when it is a value an accessor of
   * this object returned (the very object), else {@link #key(Object)}'s; null for no identity.
   */
  String keyOf(Object result) {
    for (int i = 0; i < count; i++) {
      if (handed[i] == result) {
        return keys[i];
      }
    }
    return key(result);
  }

  /**
   * The key of a key expression's result that is no request source's (a literal, a computed string,
   * an annotation's argument): {@code value:<string>}; null when the result is null or blank.
   */
  static String key(Object result) {
    return result == null ? null : Keys.key(Keys.VALUE, result.toString());
  }

  /** Returns {@code value}, remembering that it stands for {@code key}: null when there is no key (a blank value). */
  private String handOut(String value, String key) {
    if (key == null) {
      return null;
    }
    if (handed == null) {
      handed = new Object[4];
      keys = new String[4];
    } else if (count == handed.length) {
      handed = Arrays.copyOf(handed, count * 2);
      keys = Arrays.copyOf(keys, count * 2);
    }
    handed[count] = value;
    keys[count++] = key;
    return value;
  }
}
