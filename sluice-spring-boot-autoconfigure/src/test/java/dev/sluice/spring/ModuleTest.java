package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.springframework.asm.ClassReader;

/**
 * The starter's surface, kept honest. It is an automatic module (Spring Boot's jars are; Spring
 * applications run on the class path), named in its manifest; it reads only the core's and the
 * kernel's public API, so the core exports {@code dev.sluice.internal} to it no more.
 */
class ModuleTest {
  static final Path DIR = Path.of(System.getenv().getOrDefault("SLUICE_MODULE_DIR", "."));

  @Test void anAutomaticModuleOutsideTheCoresInternals() throws Exception {
    assertThat(Files.readString(DIR.resolve("pom.xml")))
        .contains("<Automatic-Module-Name>dev.sluice.spring.autoconfigure</Automatic-Module-Name>");
    assertThat(DIR.resolve("src/main/java/module-info.java")).doesNotExist();
    ModuleDescriptor core;
    try (InputStream in = Files.newInputStream(DIR.resolve("../sluice-core/target/classes/module-info.class"))) {
      core = ModuleDescriptor.read(in);
    }
    assertThat(core.exports()).allSatisfy(e -> assertThat(e.targets()).doesNotContain("dev.sluice.spring.autoconfigure"));
  }

  @Test void thePublicTypesAreTheDeliberateOnes() throws Exception {
    Set<String> publicTypes = new TreeSet<>();
    try (Stream<Path> classes = Files.list(DIR.resolve("target/classes/dev/sluice/spring"))) {
      for (Path p : (Iterable<Path>) classes::iterator) {
        String n = p.getFileName().toString();
        // Read from the class file, not loaded: Boot4StoreHealthIndicator's superclass is Boot 4's,
        // which a Boot 3.5 class path does not have.
        if (n.endsWith(".class") && !n.contains("$")
            && Modifier.isPublic(new ClassReader(Files.readAllBytes(p)).getAccess())) {
          publicTypes.add(n.substring(0, n.length() - 6));
        }
      }
    }
    assertThat(publicTypes).containsExactly("PolicyEntry", "RateLimitEventsEndpoint", "RateLimitExceededHandler", "RateLimited", "RateLimiterRegistry",
        "RateLimitsEndpoint", "RequestKeys", "SluiceAutoConfiguration", "SluiceProperties", "SluiceServletFilter",
        "SluiceWebFilter", "StoreHealthIndicator");
    assertThat(Files.readString(DIR.resolve("target/classes/META-INF/spring/org.springframework.boot.autoconfigure.AutoConfiguration.imports")).strip())
        .isEqualTo("dev.sluice.spring.SluiceAutoConfiguration\ndev.sluice.spring.SluiceRedisClientsAutoConfiguration");
    assertThat(DIR.resolve("target/classes/META-INF/spring-configuration-metadata.json")).exists();
  }

  @Test void theStarterHoldsNoCode() {
    assertThat(DIR.resolve("../sluice-spring-boot-starter/src")).doesNotExist();
    assertThat(DIR.resolve("../sluice-spring-boot4-starter/src")).doesNotExist();
  }
}
