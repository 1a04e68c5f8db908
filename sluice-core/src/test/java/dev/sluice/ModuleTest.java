package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The core's public surface and its dependency-free promise, asserted. */
class ModuleTest {
  @Test
  void exportsExactlyTheApiPackages() throws Exception {
    ModuleDescriptor d;
    try (InputStream in = Files.newInputStream(Path.of("target/classes/module-info.class"))) {
      d = ModuleDescriptor.read(in);
    }
    Set<String> unqualified = new TreeSet<>();
    Set<String> qualified = new TreeSet<>();
    for (ModuleDescriptor.Exports e : d.exports()) {
      (e.isQualified() ? qualified : unqualified).add(e.source());
    }
    assertThat(d.name()).isEqualTo("dev.sluice.core");
    assertThat(unqualified).isSubsetOf("dev.sluice", "dev.sluice.memory", "dev.sluice.spi",
        "dev.sluice.store", "dev.sluice.compose", "dev.sluice.guard", "dev.sluice.testing");
    assertThat(unqualified).contains("dev.sluice", "dev.sluice.memory", "dev.sluice.testing");
    // the test clock is a testing aid, out of the API package
    assertThat(Path.of("target/classes/dev/sluice/ManualTicker.class")).doesNotExist();
    assertThat(Path.of("target/classes/dev/sluice/testing/ManualTicker.class")).exists();
    assertThat(qualified).containsExactly("dev.sluice.internal", "dev.sluice.model");
    // the reference model (with its mutable scratch Outcome) is read by the kit and the backends that run it (SQL, Hazelcast) only
    assertThat(d.exports()).filteredOn(e -> e.source().equals("dev.sluice.model"))
        .singleElement().satisfies(e -> assertThat(e.targets())
            .containsExactlyInAnyOrder("dev.sluice.tck", "dev.sluice.jdbc", "dev.sluice.hazelcast"));
    // the internals go to the modules that implement backends (and the kernel, which offers the
    // front ends what they need of them as public API), never to a front end
    assertThat(d.exports()).filteredOn(e -> e.source().equals("dev.sluice.internal"))
        .singleElement().satisfies(e -> assertThat(e.targets())
            .containsExactlyInAnyOrder("dev.sluice.tck", "dev.sluice.redis", "dev.sluice.jdbc", "dev.sluice.kernel",
                "dev.sluice.hazelcast"));
    assertThat(d.requires()).allMatch(r -> r.name().equals("java.base"), "the core requires nothing but java.base");
  }

  /**
   * The backend SPI is one interface, its capabilities as a value, the one final limiter around it
   * (with its builder, the settings a store's builder extends, and the final forwarding base of a
   * store's own public type), what a step answers, the store exceptions, and the versioned-store
   * seam: nothing else of the pipeline is public.
   */
  @Test
  void theSpiPackageIsTheNarrowSeam() throws Exception {
    Set<String> types = new TreeSet<>();
    try (var files = Files.list(Path.of("target/classes/dev/sluice/spi"))) {
      for (Path f : (Iterable<Path>) files::iterator) {
        String n = f.getFileName().toString();
        if (n.endsWith(".class") && !n.equals("package-info.class")) {
          Class<?> c = Class.forName("dev.sluice.spi." + n.substring(0, n.length() - 6));
          if (java.lang.reflect.Modifier.isPublic(c.getModifiers())) {
            types.add(c.getName().substring("dev.sluice.spi.".length()));
          }
        }
      }
    }
    assertThat(types).containsExactlyInAnyOrder("Backend", "Backend$Step", "Capabilities", "StepResult", "StoreRateLimiter",
        "StoreRateLimiter$Builder", "StoreRateLimiter$Settings", "ForwardingStoreRateLimiter", "StoreException", "StoreNotReachedException",
        "StoreTimeoutException", "StoredRecord", "VersionedStore");
    assertThat(java.lang.reflect.Modifier.isFinal(dev.sluice.spi.StoreRateLimiter.class.getModifiers())).isTrue();
  }

  @Test
  void thePomHasNoRuntimeDependency() throws Exception {
    String pom = Files.readString(Path.of("pom.xml"));
    Matcher m = Pattern.compile("<dependency>(.*?)</dependency>", Pattern.DOTALL).matcher(pom);
    while (m.find()) {
      assertThat(m.group(1)).as("every core dependency is test-scoped").contains("<scope>test</scope>");
    }
  }
}
