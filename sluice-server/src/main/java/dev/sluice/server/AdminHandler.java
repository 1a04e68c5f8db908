package dev.sluice.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.kernel.Inputs;
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
 * </pre>
 * Bodies, errors and their JSON are the public API's ({@link ApiHandler}); a missing or wrong token
 * is a 401, compared in constant time.
 */
final class AdminHandler extends Handler.Abstract {
  private static final Set<String> RESET_FIELDS = Set.of("policy", "key");

  private final SluiceServer server;
  private final ApiHandler api;
  private final byte[] expected;
  private final Path config;

  AdminHandler(SluiceServer server, ApiHandler api, String token, Path config) {
    this.server = server;
    this.api = api;
    this.expected = token.getBytes(StandardCharsets.UTF_8);
    this.config = config;
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
            ApiHandler.send(response, callback, 200, api.write(g -> {
              g.writeStartObject();
              g.writeStringField("result", "reset");
              g.writeStringField("policy", e.policy().name());
              g.writeStringField("key", key);
              g.writeEndObject();
            }));
          });
        }
        default -> throw new ApiHandler.ApiError(404, "not_found", "no admin route " + method + " " + path
            + "; routes: GET /admin/policies, POST /admin/reload, POST /admin/reset");
      }
    } catch (ApiHandler.ApiError e) {
      api.sendError(response, callback, e);
    } catch (IllegalArgumentException e) {
      api.sendError(response, callback, 400, "bad_request", e.getMessage());
    }
    return true;
  }
}
