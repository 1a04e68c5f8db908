package dev.sluice.quarkus;

import dev.sluice.kernel.Readiness;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;

/**
 * {@code /q/health/ready}: whether the store answers, from the kernel's {@link Readiness} (the
 * service's {@code /readyz}): the last probe, refreshed at most once a second, never a decision.
 */
@org.eclipse.microprofile.health.Readiness
@Singleton
public class SluiceReadinessCheck implements HealthCheck {
  private final Sluice sluice;

  @Inject
  SluiceReadinessCheck(Sluice sluice) {
    this.sluice = sluice;
  }

  @Override public HealthCheckResponse call() {
    Readiness.Status s = sluice.readiness().status();
    return HealthCheckResponse.named("sluice").status(s.ready()).withData("store", sluice.store().name())
        .withData("reason", s.ready() ? "none" : s.reason()).build();
  }
}
