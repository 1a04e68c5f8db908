package dev.sluice.redis.redisson;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The module exports its one API package, unqualified, and nothing else. */
class ModuleTest {
  @Test void exportsExactlyTheApiPackage() throws Exception {
    ModuleDescriptor d;
    try (InputStream in = Files.newInputStream(Path.of("target/classes/module-info.class"))) {
      d = ModuleDescriptor.read(in);
    }
    assertThat(d.name()).isEqualTo("dev.sluice.redis.redisson");
    assertThat(d.exports()).allMatch(e -> !e.isQualified());
    assertThat(d.exports().stream().map(ModuleDescriptor.Exports::source).collect(Collectors.toSet()))
        .containsExactly("dev.sluice.redis.redisson");
  }
}
