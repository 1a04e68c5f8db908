package dev.sluice.kernel;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The kernel exports its one package, unqualified; it needs the core and nothing else at run time:
 * the Redis and PostgreSQL modules and their clients are static, so a memory-only front end runs
 * without them.
 */
class ModuleTest {
  private static ModuleDescriptor descriptor() throws Exception {
    try (InputStream in = Files.newInputStream(Path.of("target/classes/module-info.class"))) {
      return ModuleDescriptor.read(in);
    }
  }

  @Test void exportsExactlyTheKernelPackage() throws Exception {
    ModuleDescriptor d = descriptor();
    assertThat(d.name()).isEqualTo("dev.sluice.kernel");
    assertThat(d.exports()).allMatch(e -> !e.isQualified());
    assertThat(d.exports().stream().map(ModuleDescriptor.Exports::source).collect(Collectors.toSet()))
        .containsExactly("dev.sluice.kernel");
    assertThat(d.uses()).containsExactly(StoreFactory.class.getName());
  }

  @Test void needsOnlyTheCoreAtRunTime() throws Exception {
    Set<String> needed = descriptor().requires().stream()
        .filter(r -> !r.modifiers().contains(ModuleDescriptor.Requires.Modifier.STATIC))
        .filter(r -> !r.modifiers().contains(ModuleDescriptor.Requires.Modifier.MANDATED))
        .map(ModuleDescriptor.Requires::name).collect(Collectors.toSet());
    assertThat(needed).containsExactly("dev.sluice.core");
  }
}
