package dev.sluice.springplans;

import dev.sluice.spring.RateLimited;
import dev.sluice.spring.ReactiveServer;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.core.env.Environment;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/**
 * {@code PlansTest}'s application, outside the package {@code TestApp} scans (so that its policies
 * and annotations are its own): tenants on plans, the plan looked up on the server from the tenant.
 * The same controller serves Spring MVC and WebFlux.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import({ReactiveServer.class, PlansApp.Api.class, PlansApp.Reports.class})
public class PlansApp {
  /** The plan table, as {@code @plans} in the expressions. */
  @Bean
  Plans plans(Environment env) {
    return new Plans(env.getRequiredProperty("plans.run"));
  }

  /**
   * Which plan a tenant is on: the tenant's id starts with its name (acme, globex, initech; ids are
   * unique per run). {@code broken...} throws, {@code ghost...} answers a plan no policy has, any
   * other tenant null.
   */
  public static final class Plans {
    private final String run;

    Plans(String run) {
      this.run = run;
    }

    /** The policy name of {@code tenant}'s plan. */
    public String of(String tenant) {
      if (tenant == null) {
        return null;
      }
      if (tenant.startsWith("acme")) {
        return "pro-" + run;
      }
      if (tenant.startsWith("globex")) {
        return "free-" + run;
      }
      if (tenant.startsWith("initech")) {
        return "blocked-" + run;
      }
      if (tenant.startsWith("broken")) {
        throw new IllegalStateException("the plan store is down");
      }
      if (tenant.startsWith("ghost")) {
        return "gold-" + run;
      }
      return null;
    }
  }

  /** The endpoint the rule charges, and one calling the annotated method. */
  @RestController
  public static class Api {
    private final Reports reports;

    public Api(Reports reports) {
      this.reports = reports;
    }

    @GetMapping("/plan/hello")
    String hello() {
      return "hello";
    }

    @GetMapping("/report/{tenant}")
    Mono<String> report(@PathVariable String tenant) {
      return reports.report(tenant);
    }
  }

  /** A method whose policy the tenant's plan chooses, "plans-fallback" when it chooses none. */
  public static class Reports {
    @RateLimited(policy = "plans-fallback", policyExpression = "@plans.of(#tenant)", key = "#tenant")
    public Mono<String> report(String tenant) {
      return Mono.just("report for " + tenant);
    }
  }
}
