package dev.sluice.examples.quarkus;

import dev.sluice.quarkus.RateLimited;
import jakarta.enterprise.context.ApplicationScoped;

/** A bean whose every export is charged to the policy {@code reports}, per tenant. */
@ApplicationScoped
public class Reports {
  @RateLimited(policy = "reports", key = "#tenant")
  public String export(String tenant) {
    return "report of " + tenant + "\n";
  }
}
