package dev.sluice.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.KeyOverrides;
import dev.sluice.Policy;
import dev.sluice.kernel.Inputs;
import dev.sluice.kernel.PolicyWords;
import dev.sluice.spi.StoreException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.Set;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * The admin API, on its own port ({@code --admin-port}, loopback unless {@code --admin-host} says
 * otherwise), every request with {@code Authorization: Bearer TOKEN}:
 *
 * <pre>
 *   GET  /admin/policies                          -> the policies in force with their parameters
 *   POST /admin/reload                            -> re-read the policy file (a bad one keeps the old: 400 naming entry and rule)
 *   POST /admin/reset {"policy":"login","key":"alice"} -> forget the key's count under the policy
 *   POST /admin/override {"policy":"api","key":"acct-42","limits":{"algorithm":"fixed-window","limit":5,"window":"1m"}}
 *                                                  -> the key is decided with these limits, on every instance of the store
 *   POST /admin/override/clear {"policy":"api","key":"acct-42"} -> back to the policy's own limits, the count kept
 *   POST /admin/override/get {"policy":"api","key":"acct-42"}   -> the key's override, or null
 *   POST /admin/peek {"policy":"api","key":"acct-42"}           -> the key's override and its state (a peek, nothing charged)
 * </pre>
 * Bodies, errors and their JSON are the public API's ({@link ApiHandler}); a missing or wrong token
 * is a 401, compared in constant time. Every call that reads or changes a key is written to the log
 * with the token's identity ({@link #identity}: a fingerprint, never the token).
 */
final class AdminHandler extends Handler.Abstract {
  private static final Set<String> RESET_FIELDS = Set.of("policy", "key");
  private static final Set<String> OVERRIDE_FIELDS = Set.of("policy", "key", "limits");
  private static final System.Logger AUDIT = System.getLogger("dev.sluice.server.audit");

  private final SluiceServer server;
  private final ApiHandler api;
  private final byte[] expected;
  private final Path config;

  AdminHandler(SluiceServer server, ApiHandler api, String token, Path config) {
    this.server = server;
    this.api = api;
    this.expected = token.getBytes(StandardCharsets.UTF_8);
    this.config = config;
    this.identity = identity(token);
  }

  /** Who the audit log says made a call: "token sha256:" and the first 12 hex digits of the token's SHA-256. */
  private final String identity;

  static String identity(String token) {
    try {
      byte[] d = MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8));
      return "token sha256:" + java.util.HexFormat.of().formatHex(d, 0, 6);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every Java platform", e);
    }
  }

  private void audit(String route, String policy, String key, String outcome) {
    AUDIT.log(System.Logger.Level.INFO, "admin " + route + " policy=" + policy + " key=" + key + " by " + identity + ": " + outcome);
  }

  /** The limiter's overrides, or a 501 naming the store when it keeps none. */
  private KeyOverrides overrides(ApiHandler.Entry e) {
    if (e.limiter() instanceof KeyOverrides o) {
      return o;
    }
    throw new ApiHandler.ApiError(501, "not_supported", "the store of policy '" + e.policy().name() + "' keeps no per-key overrides");
  }

  /**
   * The token of {@code Authorization: Bearer TOKEN}; the scheme is case-insensitive (RFC 9110
   * 11.1: {@code bearer} and {@code BEARER} are Bearer). An empty string for another scheme, which no token equals.
   */
  static String bearerToken(String authorization) {
    String a = authorization.strip();
    int space = a.indexOf(' ');
    if (space < 0 || !a.substring(0, space).equalsIgnoreCase("Bearer")) {
      return "";
    }
    return a.substring(space + 1).strip();
  }

  @Override public boolean handle(Request request, Response response, Callback callback) throws Exception {
    String path = Request.getPathInContext(request);
    String method = request.getMethod();
    String auth = request.getHeaders().get(HttpHeader.AUTHORIZATION);
    if (auth == null || !MessageDigest.isEqual(expected, bearerToken(auth).getBytes(StandardCharsets.UTF_8))) {
      response.getHeaders().put(HttpHeader.WWW_AUTHENTICATE, "Bearer realm=\"sluice-admin\"");
      api.sendError(response, callback, 401, "unauthorized", auth == null ? "Authorization is missing; send Authorization: Bearer TOKEN"
          : "the bearer token is wrong");
      return true;
    }
    try {
      switch (path) {
        case "/admin/policies" -> {
          JsonInput.requireMethod(method, "GET");
          ApiHandler.send(response, callback, 200, api.policiesBody());
        }
        case "/admin/reload" -> {
          JsonInput.requireMethod(method, "POST");
          String detail;
          try {
            detail = server.reload(config);
          } catch (IllegalArgumentException e) {
            api.sendError(response, callback, 400, "bad_policy_file", "reload failed, the policies in force stay: " + e.getMessage());
            return true;
          }
          ApiHandler.send(response, callback, 200, api.write(g -> {
            g.writeStartObject();
            g.writeStringField("result", "reloaded");
            g.writeStringField("detail", detail);
            g.writeEndObject();
          }));
        }
        case "/admin/reset" -> {
          JsonInput.requireMethod(method, "POST");
          api.withBody(request, response, callback, RESET_FIELDS, "reset takes policy and key", null, 0, body -> {
            ApiHandler.Entry e = api.configured(JsonInput.requiredText(body, "policy"));
            String key = Inputs.key(JsonInput.requiredText(body, "key"));
            e.limiter().reset(key, e.policy());
            audit("reset", e.policy().name(), key, "reset");
            ApiHandler.send(response, callback, 200, api.write(g -> {
              g.writeStartObject();
              g.writeStringField("result", "reset");
              g.writeStringField("policy", e.policy().name());
              g.writeStringField("key", key);
              g.writeEndObject();
            }));
          });
        }
        case "/admin/override", "/admin/override/clear", "/admin/override/get", "/admin/peek" -> {
          JsonInput.requireMethod(method, "POST");
          boolean set = path.equals("/admin/override");
          api.withBody(request, response, callback, set ? OVERRIDE_FIELDS : RESET_FIELDS,
              set ? "override takes policy, key and limits" : path.substring(7) + " takes policy and key", null, 0,
              body -> keyCall(path, body, response, callback));
        }
        default -> throw new ApiHandler.ApiError(404, "not_found", "no admin route " + method + " " + path
            + "; routes: GET /admin/policies, POST /admin/reload, POST /admin/reset, POST /admin/override,"
            + " POST /admin/override/clear, POST /admin/override/get, POST /admin/peek");
      }
    } catch (ApiHandler.ApiError e) {
      api.sendError(response, callback, e);
    } catch (IllegalArgumentException e) {
      api.sendError(response, callback, 400, "bad_request", e.getMessage());
    }
    return true;
  }

  /** The routes on one key under one policy: set, clear or read its override, or peek at it. */
  private void keyCall(String path, JsonNode body, Response response, Callback callback) {
    ApiHandler.Entry e = api.configured(JsonInput.requiredText(body, "policy"));
    String key = Inputs.key(JsonInput.requiredText(body, "key"));
    String name = e.policy().name();
    KeyOverrides o = overrides(e);
    java.util.Map<String, Object> out = new java.util.LinkedHashMap<>();
    try {
      switch (path) {
        case "/admin/override" -> {
          Policy limits = limits(body.get("limits"), name);
          o.override(key, limits);
          out.put("result", "overridden");
          out.put("override", PolicyWords.describe(limits));
        }
        case "/admin/override/clear" -> out.put("result", o.clearOverride(key, e.policy()) ? "cleared" : "none");
        case "/admin/override/get" -> out.put("override", o.overrideOf(key, e.policy()).map(PolicyWords::describe).orElse(null));
        default -> {
          out.put("override", o.overrideOf(key, e.policy()).map(PolicyWords::describe).orElse(null));
          out.put("state", api.peekFields(e, key));
        }
      }
    } catch (StoreException unreachable) {
      audit(path.substring(7), name, key, "failed, " + unreachable.getMessage());
      throw new ApiHandler.ApiError(503, "store_unavailable", "the store did not answer: " + unreachable.getMessage());
    }
    audit(path.substring(7), name, key, String.valueOf(out.getOrDefault("result", out.get("override"))));
    java.util.Map<String, Object> answer = new java.util.LinkedHashMap<>();
    answer.put("policy", name);
    answer.put("key", key);
    answer.putAll(out);
    ApiHandler.send(response, callback, 200, api.write(g -> g.writeObject(answer)));
  }

  /**
   * The override's limits: a policy entry without its name (the policy's), in the policy file's words;
   * a 400 naming the field and the rule otherwise.
   */
  private static Policy limits(JsonNode limits, String name) {
    if (limits == null || !limits.isObject()) {
      throw new IllegalArgumentException("'limits' must be an object: algorithm and its parameters, as in the policy file");
    }
    java.util.Map<String, Object> entry = new java.util.LinkedHashMap<>();
    limits.fields().forEachRemaining(f -> entry.put(f.getKey(), f.getValue().isNumber() ? (Object) f.getValue().numberValue()
        : f.getValue().isTextual() ? f.getValue().textValue() : f.getValue().toString()));
    if (entry.containsKey("name") && !name.equals(entry.get("name"))) {
      throw new IllegalArgumentException("'limits' names policy '" + entry.get("name") + "', not '" + name
          + "'; an override keeps its policy's name (leave the name out)");
    }
    entry.put("name", name);
    return PolicyWords.policy(entry, "'limits'");
  }
}
