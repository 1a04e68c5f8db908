package dev.sluice.quarkus.deployment;

import dev.sluice.quarkus.RateLimitExceededMapper;
import dev.sluice.quarkus.RateLimited;
import dev.sluice.quarkus.RateLimitedInterceptor;
import dev.sluice.quarkus.Sluice;
import dev.sluice.quarkus.SluiceReadinessCheck;
import dev.sluice.quarkus.SluiceRouteFilter;
import io.quarkus.arc.deployment.AdditionalBeanBuildItem;
import io.quarkus.bootstrap.classloading.QuarkusClassLoader;
import io.quarkus.deployment.Capabilities;
import io.quarkus.deployment.Capability;
import io.quarkus.deployment.annotations.BuildProducer;
import io.quarkus.deployment.annotations.BuildStep;
import io.quarkus.deployment.builditem.AdditionalIndexedClassesBuildItem;
import io.quarkus.deployment.builditem.FeatureBuildItem;

/**
 * The build steps of the Sluice extension: its beans (the application, the route filter, the
 * readiness check), the {@link RateLimited} interceptor binding and its interceptor, and, with
 * Quarkus REST, the mapper of a refusal to its 429/503 verdict.
 */
class SluiceProcessor {
  private static final String FEATURE = "sluice";

  @BuildStep
  FeatureBuildItem feature() {
    return new FeatureBuildItem(FEATURE);
  }

  @BuildStep
  AdditionalBeanBuildItem beans() {
    return AdditionalBeanBuildItem.builder()
        .addBeanClasses(RateLimited.class, RateLimitedInterceptor.class, Sluice.class, SluiceRouteFilter.class,
            SluiceReadinessCheck.class)
        .setUnremovable().build();
  }

  /**
   * Sluice's meters ({@code dev.sluice.quarkus.SluiceMeters}) when the application has
   * {@code quarkus-micrometer} and {@code sluice-micrometer}; named, not referenced, so that this
   * step never loads a Micrometer class when they are absent.
   */
  @BuildStep
  void meters(Capabilities capabilities, BuildProducer<AdditionalBeanBuildItem> beans) {
    // quarkus-micrometer provides io.quarkus.metrics; Micrometer's registry on the class path tells it from another.
    if (capabilities.isPresent(Capability.METRICS)
        && QuarkusClassLoader.isClassPresentAtRuntime("io.micrometer.core.instrument.MeterRegistry")
        && QuarkusClassLoader.isClassPresentAtRuntime("dev.sluice.micrometer.RateLimitMetrics")) {
      beans.produce(AdditionalBeanBuildItem.builder().addBeanClasses("dev.sluice.quarkus.SluiceMeters").setUnremovable().build());
    }
  }

  @BuildStep
  void exceptionMapper(Capabilities capabilities, BuildProducer<AdditionalIndexedClassesBuildItem> indexed) {
    if (capabilities.isPresent(Capability.REST)) {
      indexed.produce(new AdditionalIndexedClassesBuildItem(RateLimitExceededMapper.class.getName()));
    }
  }
}
