package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ThreadLocalRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 31, item 4: per-key overrides through the admin API. Two {@code sluice serve} processes on one
 * Redis: an override set through one instance's admin API decides the next request on the other; the
 * count carries over both ways; the peek shows the override and the state; bad calls change nothing
 * and name the value and the rule; every call is audited with the token's fingerprint, never the token.
 */
class AdminOverridesTest {
  private static final String TOKEN = "t0ken-for-support";

  @TempDir Path dir;

  @Test void anOverrideSetOnOneInstanceDecidesTheNextRequestOnTheOtherAndKeepsTheCount() throws Exception {
    StoreSwitchTest.reachable("Redis", URI.create(StoreSwitchTest.REDIS).getHost(),
        URI.create(StoreSwitchTest.REDIS).getPort() < 0 ? 6379 : URI.create(StoreSwitchTest.REDIS).getPort());
    String api = "api-" + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffffffL);
    Path config = dir.resolve("policies.yaml");
    Files.writeString(config, """
        policies:
          - name: %s
            algorithm: fixed-window
            limit: 10
            window: 1h
        """.formatted(api));
    Path token = dir.resolve("admin.token");
    Files.writeString(token, TOKEN + "\n");
    try (ServeProcess a = ServeProcess.start(dir, "--config", config.toString(), "--port", "0", "--redis", StoreSwitchTest.REDIS,
             "--store-timeout", "2s", "--admin-port", "0", "--admin-token-file", token.toString());
         ServeProcess b = ServeProcess.start(dir, "--config", config.toString(), "--port", "0", "--redis", StoreSwitchTest.REDIS,
             "--store-timeout", "2s")) {
      Matcher m = Pattern.compile("sluice: admin API on (http://127\\.0\\.0\\.1:\\d+) ").matcher(String.join("\n", a.lines()));
      assertThat(m.find()).as("%s", a.lines()).isTrue();
      URI admin = URI.create(m.group(1));
      Http onA = new Http(a.base);
      Http onB = new Http(b.base);
      Http plain = new Http(admin);
      String acquire = "{\"policy\":\"" + api + "\",\"key\":\"acct-42\",\"permits\":6}";
      assertThat(onA.post("/v1/acquire", acquire).statusCode()).isEqualTo(200); // 6 of 10

      // Bad calls: refused with the value and the rule, nothing changed.
      assertThat(plain.send(HttpRequest.newBuilder(admin.resolve("/admin/override")).header("Authorization", "Bearer wrong")
          .POST(HttpRequest.BodyPublishers.ofString("{}"))).statusCode()).isEqualTo(401);
      HttpResponse<String> anonymous = plain.send(HttpRequest.newBuilder(admin.resolve("/admin/override"))
          .POST(HttpRequest.BodyPublishers.ofString("{}")));
      assertThat(anonymous.statusCode()).isEqualTo(401);
      HttpResponse<String> malformed = plain.send(post(admin, "/admin/override",
          "{\"policy\":\"" + api + "\",\"key\":\"acct-42\",\"limits\":{\"algorithm\":\"fixed-window\",\"limit\":0,\"window\":\"1h\"}}"));
      assertThat(malformed.statusCode()).isEqualTo(400);
      assertThat(malformed.body()).contains("'limits'").contains("limit");
      HttpResponse<String> typo = plain.send(post(admin, "/admin/override",
          "{\"policy\":\"" + api + "\",\"key\":\"acct-42\",\"limits\":{\"algorithm\":\"fixed-window\",\"limit\":4,\"windw\":\"1h\"}}"));
      assertThat(typo.statusCode()).isEqualTo(400);
      assertThat(typo.body()).contains("unknown parameter 'windw'");
      HttpResponse<String> renamed = plain.send(post(admin, "/admin/override",
          "{\"policy\":\"" + api + "\",\"key\":\"acct-42\",\"limits\":{\"name\":\"other\",\"algorithm\":\"fixed-window\",\"limit\":4,\"window\":\"1h\"}}"));
      assertThat(renamed.statusCode()).isEqualTo(400);
      assertThat(renamed.body()).contains("keeps its policy's name");
      assertThat(plain.send(post(admin, "/admin/override", "{\"policy\":\"nope\",\"key\":\"acct-42\",\"limits\":{}}")).statusCode())
          .isEqualTo(400);
      assertThat(ServerApiTest.json(plain.send(post(admin, "/admin/override/get", "{\"policy\":\"" + api + "\",\"key\":\"acct-42\"}")))
          .get("override").isNull()).as("nothing changed").isTrue();

      // Lowered to 4 through A's admin API: B refuses acct-42 at once (6 counted), other keys keep 10.
      HttpResponse<String> set = plain.send(post(admin, "/admin/override",
          "{\"policy\":\"" + api + "\",\"key\":\"acct-42\",\"limits\":{\"algorithm\":\"fixed-window\",\"limit\":4,\"window\":\"1h\"}}"));
      assertThat(set.statusCode()).as(set.body()).isEqualTo(200);
      assertThat(set.body()).isEqualTo("{\"policy\":\"" + api + "\",\"key\":\"acct-42\",\"result\":\"overridden\",\"override\":"
          + "{\"name\":\"" + api + "\",\"algorithm\":\"fixed-window\",\"limit\":4,\"window\":\"1h\"}}");
      HttpResponse<String> refused = onB.post("/v1/acquire", "{\"policy\":\"" + api + "\",\"key\":\"acct-42\"}");
      assertThat(refused.statusCode()).isEqualTo(429);
      assertThat(ServerApiTest.header(refused, "RateLimit-Policy")).contains("q=4");
      assertThat(onB.post("/v1/acquire", "{\"policy\":\"" + api + "\",\"key\":\"acct-7\"}").statusCode()).isEqualTo(200);

      // The peek for support staff: the override and the state, nothing charged.
      JsonNode peek = ServerApiTest.json(plain.send(post(admin, "/admin/peek", "{\"policy\":\"" + api + "\",\"key\":\"acct-42\"}")));
      assertThat(peek.get("override").get("limit").longValue()).isEqualTo(4);
      assertThat(peek.get("state").get("limit").longValue()).isEqualTo(4);
      assertThat(peek.get("state").get("remaining").longValue()).isZero();

      // Raised to 20: B admits at once, the 6 still counted.
      assertThat(plain.send(post(admin, "/admin/override",
          "{\"policy\":\"" + api + "\",\"key\":\"acct-42\",\"limits\":{\"algorithm\":\"fixed-window\",\"limit\":20,\"window\":\"1h\"}}"))
          .statusCode()).isEqualTo(200);
      HttpResponse<String> raised = onB.post("/v1/acquire", acquire);
      assertThat(raised.statusCode()).isEqualTo(200);
      assertThat(ServerApiTest.json(raised).get("remaining").longValue()).isEqualTo(8); // 6 + 6 of 20

      // Cleared: back to 10 with 12 counted, refused; clearing again says there was none.
      assertThat(plain.send(post(admin, "/admin/override/clear", "{\"policy\":\"" + api + "\",\"key\":\"acct-42\"}")).body())
          .contains("\"result\":\"cleared\"");
      assertThat(onB.post("/v1/acquire", "{\"policy\":\"" + api + "\",\"key\":\"acct-42\"}").statusCode()).isEqualTo(429);
      assertThat(plain.send(post(admin, "/admin/override/clear", "{\"policy\":\"" + api + "\",\"key\":\"acct-42\"}")).body())
          .contains("\"result\":\"none\"");

      String log = String.join("\n", a.lines());
      assertThat(log).contains("admin override policy=" + api + " key=acct-42 by " + AdminHandler.identity(TOKEN));
      assertThat(log).contains("admin override/clear policy=" + api + " key=acct-42 by " + AdminHandler.identity(TOKEN) + ": cleared");
      assertThat(log).doesNotContain(TOKEN);
    }
  }

  private static HttpRequest.Builder post(URI admin, String path, String body) {
    return HttpRequest.newBuilder(admin.resolve(path)).header("Authorization", "Bearer " + TOKEN)
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
  }
}
