package dev.sluice.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.InputStream;
import java.lang.reflect.Modifier;
import java.lang.module.ModuleDescriptor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The module exports its one API package to everyone, and the servlet helpers a front end of Sluice's
 * own needs only to that front end (the Spring starter), and nothing else: a user of sluice-http sees
 * only what a user needs (issue 28, item 7).
 */
class ModuleTest {
  private static ModuleDescriptor descriptor() throws Exception {
    try (InputStream in = Files.newInputStream(Path.of("target/classes/module-info.class"))) {
      return ModuleDescriptor.read(in);
    }
  }

  @Test void exportsExactlyTheApiPackageToEveryone() throws Exception {
    ModuleDescriptor d = descriptor();
    assertThat(d.name()).isEqualTo("dev.sluice.http");
    assertThat(d.exports().stream().filter(e -> !e.isQualified()).map(ModuleDescriptor.Exports::source)
        .collect(Collectors.toSet())).containsExactly("dev.sluice.http");
  }

  @Test void exportsTheFrontEndHelpersOnlyToTheSpringStarter() throws Exception {
    Map<String, Set<String>> qualified = descriptor().exports().stream().filter(ModuleDescriptor.Exports::isQualified)
        .collect(Collectors.toMap(ModuleDescriptor.Exports::source, ModuleDescriptor.Exports::targets));
    assertThat(qualified).containsExactly(Map.entry("dev.sluice.http.frontend", Set.of("dev.sluice.spring.autoconfigure", "dev.sluice.spring.gateway")));
  }

  @Test void theApiPackageHasNoHelperPublicOnlyForSiblings() throws Exception {
    assertThatThrownBy(() -> RateLimitServletFilter.class.getMethod("view", jakarta.servlet.http.HttpServletRequest.class))
        .isInstanceOf(NoSuchMethodException.class);
    assertThatThrownBy(() -> RateLimitServletFilter.class.getMethod("refuse", jakarta.servlet.http.HttpServletResponse.class,
        HttpVerdict.class)).isInstanceOf(NoSuchMethodException.class);
    assertThatThrownBy(() -> HttpVerdict.class.getMethod("code", dev.sluice.Reason.class)).isInstanceOf(NoSuchMethodException.class);
    assertThatThrownBy(() -> HttpVerdict.class.getMethod("code", dev.sluice.Path.class)).isInstanceOf(NoSuchMethodException.class);
    assertThat(Modifier.isPublic(RateLimitHeaders.class.getDeclaredMethod("policyItem", dev.sluice.Decision.class).getModifiers()))
        .isFalse();
  }
}
