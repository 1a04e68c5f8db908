package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPInputStream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;
import org.junit.jupiter.api.Test;

/**
 * Issue 17.12: the container image Jib builds in the {@code package} phase without a Docker daemon
 * ({@code target/jib-image-check.tar}, on an empty base since this machine reaches no registry; the
 * image users build takes {@code eclipse-temurin:17-jre}). Reads the tarball as {@code docker load}
 * would: the manifest, the image config (entrypoint, command, port) and every layer's files. The
 * image is never run here.
 */
class ContainerImageIT {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Test void theImageTarHoldsTheJarsTheEntrypointTheCommandAndThePort() throws IOException {
    Path tar = Path.of(System.getenv().getOrDefault("SLUICE_MODULE_DIR", ".")).resolve("target/jib-image-check.tar");
    assertThat(tar).as("built by jib:buildTar in the package phase").exists();
    Map<String, byte[]> image = untar(Files.newInputStream(tar));

    JsonNode manifest = JSON.readTree(image.get("manifest.json")).get(0);
    assertThat(manifest.get("RepoTags").get(0).textValue()).startsWith("sluice-server:");
    JsonNode config = JSON.readTree(image.get(manifest.get("Config").textValue())).get("config");
    List<String> entrypoint = strings(config.get("Entrypoint"));
    System.out.println("image entrypoint: " + entrypoint + ", command: " + config.get("Cmd") + ", ports: " + config.get("ExposedPorts"));
    assertThat(entrypoint.get(0)).isEqualTo("java");
    assertThat(entrypoint).contains("-cp", "dev.sluice.server.SluiceCli");
    assertThat(entrypoint.get(entrypoint.indexOf("-cp") + 1)).isEqualTo("@/app/jib-classpath-file");
    assertThat(strings(config.get("Cmd"))).containsExactly("serve", "--config", "/etc/sluice/policies.yaml", "--host", "0.0.0.0");
    assertThat(config.get("ExposedPorts").fieldNames()).toIterable().containsExactly("8080/tcp");

    Map<String, byte[]> files = new LinkedHashMap<>();
    for (JsonNode layer : manifest.get("Layers")) {
      files.putAll(untar(new GZIPInputStream(new ByteArrayInputStream(image.get(layer.textValue())))));
    }
    // The class path the entrypoint reads (a Java 9+ argument file): every entry is a file of the image.
    List<String> classPath = List.of(new String(files.get("app/jib-classpath-file"), StandardCharsets.UTF_8).strip().split(":"));
    assertThat(classPath).allSatisfy(entry -> assertThat(entry.endsWith("/*")
        ? files.keySet().stream().anyMatch(f -> f.startsWith(entry.substring(1, entry.length() - 1)) && f.endsWith(".jar"))
        : files.containsKey(entry.substring(1))).as(entry).isTrue());
    List<String> jars = files.keySet().stream().filter(n -> n.startsWith("app/classpath/") && n.endsWith(".jar")).toList();
    assertThat(jars).hasSize(1);
    assertThat(jars.get(0)).matches("app/classpath/sluice-server-[^/]+\\.jar");
    assertThat(classPath.get(0)).isEqualTo("/app/classpath/*");
    assertThat(entries(files.get(jars.get(0)))).contains("dev/sluice/server/SluiceCli.class", "simplelogger.properties");
    List<String> libs = files.keySet().stream().filter(n -> n.startsWith("app/libs/")).toList();
    for (String dependency : List.of("sluice-core", "sluice-redis", "sluice-jdbc", "sluice-http", "jetty-server", "postgresql", "picocli")) {
      assertThat(libs).as(dependency).anyMatch(n -> n.startsWith("app/libs/" + dependency + "-"));
    }
    assertThat(libs).as("the provided Servlet API stays out").noneMatch(n -> n.contains("jakarta.servlet-api"));
  }

  private static List<String> strings(JsonNode array) {
    List<String> out = new ArrayList<>();
    array.forEach(n -> out.add(n.textValue()));
    return out;
  }

  private static List<String> entries(byte[] jar) throws IOException {
    List<String> out = new ArrayList<>();
    try (ZipInputStream z = new ZipInputStream(new ByteArrayInputStream(jar))) {
      for (ZipEntry e; (e = z.getNextEntry()) != null; ) {
        out.add(e.getName());
      }
    }
    return out;
  }

  /** The regular files of a tar stream (ustar, with PAX and GNU long names), by path without a leading "./" or "/". */
  static Map<String, byte[]> untar(InputStream stream) throws IOException {
    Map<String, byte[]> files = new LinkedHashMap<>();
    try (InputStream in = stream) {
      String longName = null;
      while (true) {
        byte[] h = in.readNBytes(512);
        if (h.length < 512 || h[0] == 0) {
          return files;
        }
        String name = text(h, 0, 100);
        String prefix = text(h, 345, 155);
        if (!prefix.isEmpty()) {
          name = prefix + "/" + name;
        }
        int size = Integer.parseInt(text(h, 124, 12).trim(), 8);
        byte type = h[156];
        byte[] body = in.readNBytes(size);
        in.skipNBytes((512 - size % 512) % 512);
        if (type == 'L') {
          longName = new String(body, StandardCharsets.UTF_8).replace("\0", "");
        } else if (type == 'x') {
          for (String record : new String(body, StandardCharsets.UTF_8).split("\n")) {
            int eq = record.indexOf(" path=");
            if (eq >= 0) {
              longName = record.substring(eq + 6);
            }
          }
        } else {
          String path = longName != null ? longName : name;
          longName = null;
          if (type == '0' || type == 0) {
            files.put(path.replaceFirst("^\\./", "").replaceFirst("^/", ""), body);
          }
        }
      }
    }
  }

  private static String text(byte[] b, int from, int length) {
    int end = from;
    while (end < from + length && b[end] != 0) {
      end++;
    }
    return new String(b, from, end - from, StandardCharsets.UTF_8);
  }
}
