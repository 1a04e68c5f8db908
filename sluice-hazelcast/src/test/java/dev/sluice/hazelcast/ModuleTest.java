package dev.sluice.hazelcast;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.kernel.StoreFactory;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The module exports its one API package, unqualified, and nothing else (the processor, the stored
 * budget and the backend stay package-private); it provides the kernel's store factory named
 * {@code hazelcast}, found by name the way every front end finds a store.
 */
class ModuleTest {
  @Test void exportsExactlyTheApiPackageAndProvidesTheStoreFactory() throws Exception {
    ModuleDescriptor d;
    try (InputStream in = Files.newInputStream(Path.of("target/classes/module-info.class"))) {
      d = ModuleDescriptor.read(in);
    }
    assertThat(d.name()).isEqualTo("dev.sluice.hazelcast");
    assertThat(d.exports()).allMatch(e -> !e.isQualified());
    assertThat(d.exports().stream().map(ModuleDescriptor.Exports::source).collect(Collectors.toSet()))
        .containsExactly("dev.sluice.hazelcast");
    assertThat(d.provides()).singleElement().satisfies(p -> {
      assertThat(p.service()).isEqualTo(StoreFactory.class.getName());
      assertThat(p.providers()).containsExactly(HazelcastStoreFactory.class.getName());
    });
  }

  @Test void theKernelFindsTheStoreByItsName() {
    assertThat(StoreFactory.named("hazelcast")).isInstanceOf(HazelcastStoreFactory.class);
  }
}
