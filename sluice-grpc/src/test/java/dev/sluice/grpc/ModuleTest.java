package dev.sluice.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The module exports its one API package to everyone and nothing else, and reads none of the core's
 * internals (it is a front end on the public API: dev.sluice.internal is for the backends).
 */
class ModuleTest {
  private static ModuleDescriptor descriptor() throws Exception {
    try (InputStream in = Files.newInputStream(Path.of("target/classes/module-info.class"))) {
      return ModuleDescriptor.read(in);
    }
  }

  @Test void exportsExactlyTheApiPackageToEveryone() throws Exception {
    ModuleDescriptor d = descriptor();
    assertThat(d.name()).isEqualTo("dev.sluice.grpc");
    assertThat(d.exports()).allSatisfy(e -> assertThat(e.isQualified()).isFalse());
    assertThat(d.exports().stream().map(ModuleDescriptor.Exports::source).collect(Collectors.toSet()))
        .containsExactly("dev.sluice.grpc");
    assertThat(d.packages()).containsExactly("dev.sluice.grpc");
  }

  @Test void readsTheCoreHttpAndGrpcAndNoStore() throws Exception {
    assertThat(descriptor().requires().stream().map(ModuleDescriptor.Requires::name).collect(Collectors.toSet()))
        .contains("dev.sluice.core", "dev.sluice.http", "io.grpc", "io.grpc.protobuf")
        .doesNotContain("dev.sluice.redis", "dev.sluice.jdbc", "lettuce.core");
  }

  @Test void usesNoInternalPackageOfTheCore() throws Exception {
    try (var sources = Files.walk(Path.of("src/main/java"))) {
      for (Path p : (Iterable<Path>) sources.filter(f -> f.toString().endsWith(".java"))::iterator) {
        assertThat(Files.readString(p)).as(p.toString()).doesNotContain("dev.sluice.internal");
      }
    }
  }
}
