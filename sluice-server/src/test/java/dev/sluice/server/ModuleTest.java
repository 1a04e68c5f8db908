package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Test;

/** The server is an application: it exports no package, and its only entry point is the CLI. */
class ModuleTest {
  @Test void exportsNothingAndOpensItsPackageOnlyToPicocli() throws Exception {
    ModuleDescriptor d;
    try (InputStream in = Files.newInputStream(Path.of("target/classes/module-info.class"))) {
      d = ModuleDescriptor.read(in);
    }
    assertThat(d.name()).isEqualTo("dev.sluice.server");
    assertThat(d.exports()).isEmpty();
    assertThat(d.opens()).singleElement().satisfies(o -> {
      assertThat(o.source()).isEqualTo("dev.sluice.server");
      assertThat(o.targets()).containsExactly("info.picocli");
    });
  }

  @Test void theRunnableJarNamesTheCliAsItsMainClass() throws Exception {
    Path jar = Path.of("target/sluice-server.jar");
    // The jar is built in the package phase, after the tests; a first build has none yet.
    org.junit.jupiter.api.Assumptions.assumeTrue(Files.exists(jar), "target/sluice-server.jar not built yet");
    try (JarFile j = new JarFile(jar.toFile())) {
      assertThat(j.getManifest().getMainAttributes().getValue("Main-Class")).isEqualTo("dev.sluice.server.SluiceCli");
      assertThat(j.getEntry("dev/sluice/server/SluiceCli.class")).isNotNull();
      assertThat(j.getEntry("picocli/CommandLine.class")).isNotNull();
      assertThat(j.getEntry("org/eclipse/jetty/server/Server.class")).isNotNull();
    }
  }
}
