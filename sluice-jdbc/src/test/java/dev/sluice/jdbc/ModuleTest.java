package dev.sluice.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The module's public surface is what a user needs, no more (issue 28, item 7): two exported
 * packages, in them the limiter and the versioned store, and nothing of the backend behind them;
 * the JDBC internals (deadlines, connection gate, failure classification) stay unexported.
 */
class ModuleTest {
  @Test void exportsTheTwoApiPackagesAndNoInternals() throws Exception {
    ModuleDescriptor d;
    try (InputStream in = Files.newInputStream(Path.of("target/classes/module-info.class"))) {
      d = ModuleDescriptor.read(in);
    }
    Set<String> exports = d.exports().stream().map(e -> e.source() + (e.isQualified() ? " to " + e.targets() : ""))
        .collect(Collectors.toCollection(TreeSet::new));
    assertThat(exports).containsExactly("dev.sluice.jdbc", "dev.sluice.jdbc.store");
    assertThat(Path.of("target/classes/dev/sluice/jdbc/internal")).isDirectory();
  }

  @Test void thePublicTypesAreTheLimiterAndTheVersionedStore() throws Exception {
    assertThat(publicTypes("dev/sluice/jdbc")).containsExactly("JdbcRateLimiter");
    assertThat(publicTypes("dev/sluice/jdbc/store")).containsExactly("JdbcVersionedStore");
  }

  private static Set<String> publicTypes(String dir) throws IOException, ClassNotFoundException {
    Set<String> names = new TreeSet<>();
    try (Stream<Path> files = Files.list(Path.of("target/classes").resolve(dir))) {
      for (Path p : (Iterable<Path>) files::iterator) {
        String n = p.getFileName().toString();
        if (n.endsWith(".class") && !n.contains("$") && !n.equals("package-info.class")) {
          String simple = n.substring(0, n.length() - ".class".length());
          Class<?> c = Class.forName(dir.replace('/', '.') + "." + simple, false, ModuleTest.class.getClassLoader());
          if (Modifier.isPublic(c.getModifiers())) {
            names.add(simple);
          }
        }
      }
    }
    return names;
  }
}
