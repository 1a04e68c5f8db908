package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLParser;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 17.12: the deployment examples say what the service does: the Kubernetes probes are the
 * liveness and readiness endpoints of issue 17.3, a preStop pause precedes the drain and the grace
 * period outlasts it, and the policies both examples mount parse; the systemd unit reloads with
 * SIGHUP and stops with SIGTERM.
 */
class DeploymentFilesTest {
  @TempDir Path dir;

  @Test void kubernetesProbesPreStopAndPoliciesAreTheServices() throws Exception {
    List<JsonNode> docs = new ArrayList<>();
    ObjectMapper yaml = new ObjectMapper(new YAMLFactory());
    try (YAMLParser p = new YAMLFactory().createParser(Path.of("../examples/deploy/kubernetes.yaml").toFile())) {
      ObjectReader r = yaml.readerFor(JsonNode.class);
      r.readValues(p).forEachRemaining(d -> docs.add((JsonNode) d));
    }
    JsonNode deployment = docs.stream().filter(d -> d.path("kind").asText().equals("Deployment")).findFirst().orElseThrow();
    JsonNode pod = deployment.at("/spec/template/spec");
    JsonNode c = pod.at("/containers/0");
    assertThat(c.at("/livenessProbe/httpGet/path").asText()).isEqualTo("/healthz");
    assertThat(c.at("/readinessProbe/httpGet/path").asText()).isEqualTo("/readyz");
    long preStop = c.at("/lifecycle/preStop/sleep/seconds").asLong();
    assertThat(preStop).isPositive();
    List<String> args = new ArrayList<>();
    c.get("args").forEach(a -> args.add(a.asText()));
    long shutdown = Durations.parse("--shutdown-timeout", args.get(args.indexOf("--shutdown-timeout") + 1)).toSeconds();
    assertThat(pod.get("terminationGracePeriodSeconds").asLong()).as("outlasts the pause and the drain").isGreaterThan(preStop + shutdown);

    JsonNode config = docs.stream().filter(d -> d.path("kind").asText().equals("ConfigMap")).findFirst().orElseThrow();
    Path policies = dir.resolve("policies.yaml");
    Files.writeString(policies, config.at("/data/policies.yaml").asText());
    assertThat(PolicyFile.read(policies)).extracting(dev.sluice.Policy::name).containsExactly("login", "api");
    // The container's arguments are serve's own: they parse, and without the secret's token serve refuses to start.
    assertThat(args.get(0)).isEqualTo("serve");
    assertThat(ServeProcessTest.runErr(args.stream()
        .map(a -> a.equals("/etc/sluice/policies.yaml") ? policies.toString() : a).toList().toArray(String[]::new)))
        .startsWith("sluice: --admin-port needs a token");
  }

  @Test void systemdReloadsWithSighupAndStopsWithSigterm() throws Exception {
    String unit = Files.readString(Path.of("../examples/deploy/sluice.service"));
    assertThat(unit).contains("ExecReload=/bin/kill -HUP $MAINPID").contains("KillSignal=SIGTERM")
        .contains("EnvironmentFile=/etc/sluice/sluice.env");
  }
}
