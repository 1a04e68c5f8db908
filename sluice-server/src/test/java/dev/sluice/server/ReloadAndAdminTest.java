package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code sluice serve} as a real process: SIGHUP reloads (issue 17.5), the admin API on its own port (issue 17.6). */
class ReloadAndAdminTest {
  private static final String EXPORTS = """
        - name: exports
          algorithm: sliding-log
          limit: 2
          window: 1h
      """;

  @TempDir Path dir;

  /**
   * Issue 17.5: SIGHUP killed the process (exit 129). It re-reads the policy file; counts survive (a
   * budget is its policy name and key); a bad file keeps the policies in force and says which entry
   * and rule.
   */
  @Test void sighupReloadsThePolicyFileKeepingCountsAndABadFileKeepsTheOld() throws Exception {
    Path config = dir.resolve("policies.yaml");
    Files.writeString(config, ServerApiTest.POLICIES);
    try (ServeProcess p = ServeProcess.start(dir, "--config", config.toString(), "--port", "0")) {
      Http http = new Http(p.base);
      String alice = "{\"policy\":\"login\",\"key\":\"alice\",\"permits\":2}";
      assertThat(ServerApiTest.json(http.post("/v1/acquire", alice)).get("remaining").longValue()).isEqualTo(1); // 2 of 3

      Files.writeString(config, ServerApiTest.POLICIES.replace("limit: 3", "limit: 5") + EXPORTS);
      p.signal("HUP");
      p.awaitLine("sluice: reloaded 4 policies from " + config + " (changed: login; added: exports; removed: none)");
      // The count survived: 2 of the new 5 were used, so 2 more leave 1.
      assertThat(ServerApiTest.json(http.post("/v1/acquire", alice)).get("remaining").longValue()).isEqualTo(1);
      assertThat(http.post("/v1/acquire", "{\"policy\":\"exports\",\"key\":\"a\"}").statusCode()).isEqualTo(200);

      Files.writeString(config, ServerApiTest.POLICIES.replace("window: 1m", "windw: 1m"));
      p.signal("HUP");
      p.awaitLine("sluice: reload failed, the policies in force stay: " + config + ": policy #1 ('login'): unknown parameter 'windw'");
      assertThat(http.post("/v1/acquire", "{\"policy\":\"exports\",\"key\":\"a\"}").statusCode()).as("still in force").isEqualTo(200);
      assertThat(ServerApiTest.json(http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"alice\"}")).get("remaining").longValue())
          .isZero();
      assertThat(p.process.isAlive()).isTrue();
      p.signal("TERM");
      assertThat(p.exitStatus()).isZero();
    }
  }

  /**
   * Issue 17.5's optional file watch: with {@code --watch}, saving the policy file reloads it, also
   * when the editor saves by renaming a new file over it; a bad save keeps the policies in force.
   */
  @Test void watchReloadsTheFileWhenItsContentChanges() throws Exception {
    Path config = dir.resolve("policies.yaml");
    Files.writeString(config, ServerApiTest.POLICIES);
    try (ServeProcess p = ServeProcess.start(dir, "--config", config.toString(), "--port", "0", "--watch")) {
      Http http = new Http(p.base);
      p.awaitLine("sluice: watching " + config + ": a change to its content reloads it, as SIGHUP does");
      String alice = "{\"policy\":\"login\",\"key\":\"alice\",\"permits\":2}";
      assertThat(ServerApiTest.json(http.post("/v1/acquire", alice)).get("remaining").longValue()).isEqualTo(1);

      Path saved = dir.resolve("policies.yaml.tmp");
      Files.writeString(saved, ServerApiTest.POLICIES.replace("limit: 3", "limit: 5") + EXPORTS);
      Files.move(saved, config, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
      p.awaitLine("sluice: reloaded 4 policies from " + config + " (changed: login; added: exports; removed: none)");
      assertThat(ServerApiTest.json(http.post("/v1/acquire", alice)).get("remaining").longValue()).as("the count survived").isEqualTo(1);

      Files.writeString(config, ServerApiTest.POLICIES.replace("window: 1m", "windw: 1m"));
      p.awaitLine("sluice: reload failed, the policies in force stay: " + config + ": policy #1 ('login'): unknown parameter 'windw'");
      assertThat(http.post("/v1/acquire", "{\"policy\":\"exports\",\"key\":\"a\"}").statusCode()).as("still in force").isEqualTo(200);
      p.signal("TERM");
      assertThat(p.exitStatus()).isZero();
    }
  }

  /** Issue 17.6: the admin API on its own loopback port, behind a bearer token: list, reset a key, reload. */
  @Test void adminApiListsResetsAndReloadsBehindABearerToken() throws Exception {
    Path config = dir.resolve("policies.yaml");
    Files.writeString(config, ServerApiTest.POLICIES);
    Path token = dir.resolve("admin.token");
    Files.writeString(token, "s3cret-token\n");
    try (ServeProcess p = ServeProcess.start(dir, "--config", config.toString(), "--port", "0", "--admin-port", "0",
        "--admin-token-file", token.toString())) {
      Matcher m = Pattern.compile("sluice: admin API on (http://127\\.0\\.0\\.1:\\d+) ").matcher(String.join("\n", p.lines()));
      assertThat(m.find()).as("%s", p.lines()).isTrue();
      URI admin = URI.create(m.group(1));
      Http http = new Http(p.base);
      Http plain = new Http(admin);
      Function<String, HttpRequest.Builder> authed = path -> HttpRequest.newBuilder(admin.resolve(path))
          .header("Authorization", "Bearer s3cret-token").header("Content-Type", "application/json");

      HttpResponse<String> anonymous = plain.get("/admin/policies");
      assertThat(anonymous.statusCode()).isEqualTo(401);
      assertThat(ServerApiTest.header(anonymous, "WWW-Authenticate")).startsWith("Bearer");
      assertThat(plain.send(HttpRequest.newBuilder(admin.resolve("/admin/policies")).header("Authorization", "Bearer nope")).statusCode())
          .isEqualTo(401);
      assertThat(http.get("/admin/policies").statusCode()).as("not on the public port").isEqualTo(404);
      HttpResponse<String> list = plain.send(authed.apply("/admin/policies"));
      assertThat(list.statusCode()).isEqualTo(200);
      assertThat(list.body()).contains("{\"name\":\"login\",\"algorithm\":\"fixed-window\",\"limit\":3,\"window\":\"1m\"}");

      String bob = "{\"policy\":\"login\",\"key\":\"bob\",\"permits\":3}";
      assertThat(http.post("/v1/acquire", bob).statusCode()).isEqualTo(200);
      assertThat(http.post("/v1/acquire", bob).statusCode()).isEqualTo(429);
      HttpResponse<String> reset = plain.send(authed.apply("/admin/reset")
          .POST(HttpRequest.BodyPublishers.ofString("{\"policy\":\"login\",\"key\":\"bob\"}")));
      assertThat(reset.body()).isEqualTo("{\"result\":\"reset\",\"policy\":\"login\",\"key\":\"bob\"}");
      assertThat(http.post("/v1/acquire", bob).statusCode()).as("bob's window was reset").isEqualTo(200);
      assertThat(plain.send(authed.apply("/admin/reset").POST(HttpRequest.BodyPublishers.ofString("{\"policy\":\"nope\",\"key\":\"bob\"}")))
          .statusCode()).isEqualTo(400);

      Files.writeString(config, ServerApiTest.POLICIES.replace("limit: 3", "limit: 7"));
      HttpResponse<String> reload = plain.send(authed.apply("/admin/reload").POST(HttpRequest.BodyPublishers.noBody()));
      assertThat(reload.statusCode()).as(reload.body()).isEqualTo(200);
      assertThat(ServerApiTest.json(reload).get("detail").textValue()).endsWith("(changed: login; added: none; removed: none)");
      Files.writeString(config, "policies: []\n");
      HttpResponse<String> bad = plain.send(authed.apply("/admin/reload").POST(HttpRequest.BodyPublishers.noBody()));
      assertThat(bad.statusCode()).isEqualTo(400);
      assertThat(ServerApiTest.json(bad).get("error").textValue()).isEqualTo("bad_policy_file");
      assertThat(plain.send(authed.apply("/admin/policies")).body()).contains("\"limit\":7");
    }
    Files.writeString(config, ServerApiTest.POLICIES);
    assertThat(ServeProcessTest.runErr("serve", "--config", config.toString(), "--admin-port", "0"))
        .isEqualTo("sluice: --admin-port needs a token: --admin-token-file FILE or $SLUICE_ADMIN_TOKEN");
  }
}
