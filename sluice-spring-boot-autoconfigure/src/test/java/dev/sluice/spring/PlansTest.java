package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.redis.SharedRedis;
import dev.sluice.springplans.PlansApp;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Tenants on plans on Redis, the plan chosen per request by SpEL over a header
 * ({@code sluice.http.rules[].policy-expression}) and per call ({@code @RateLimited(policyExpression)}),
 * looked up on the server from the tenant (never a plan the client sends): each tenant's limit is its
 * plan's, exactly; a lookup that fails, answers null or a plan no policy has is decided by the
 * fallback policy, never let through. Spring MVC and WebFlux, each on a real port. Policy names and
 * tenant ids are unique per run (the shared Redis keeps earlier runs' counts).
 */
class PlansTest {
  @BeforeAll static void sharedRedis() {
    SharedRedis.client();
  }

  @Test void springMvc() {
    plansAreExactPerTenant("servlet");
  }

  @Test void webFlux() {
    plansAreExactPerTenant("reactive");
  }

  private static void plansAreExactPerTenant(String webType) {
    String run = UUID.randomUUID().toString().substring(0, 8);
    String id = "-" + run;
    try (ConfigurableApplicationContext app = start(run, webType)) {
      Client c = Apps.client(app);
      assertThat(c.warmUp("/plan/hello", "X-Tenant", "warm-up" + id).statusCode()).isIn(200, 429);
      // The rule: pro 6, free 3, blocked 1, exactly, each tenant its own count.
      assertThat(admitted(c, "/plan/hello", "acme" + id, 10)).isEqualTo(6);
      assertThat(admitted(c, "/plan/hello", "globex" + id, 10)).isEqualTo(3);
      assertThat(admitted(c, "/plan/hello", "initech" + id, 10)).isEqualTo(1);
      assertThat(admitted(c, "/plan/hello", "acme2" + id, 10)).isEqualTo(6);
      // The answer carries the deciding plan's numbers.
      HttpResponse<String> r = c.get("/plan/hello", "X-Tenant", "acme3" + id);
      assertThat(r.headers().firstValue("RateLimit-Policy")).hasValueSatisfying(v -> assertThat(v).contains("\"pro-" + run + "\";q=6"));
      HttpResponse<String> refused = c.get("/plan/hello", "X-Tenant", "globex" + id);
      assertThat(refused.statusCode()).isEqualTo(429);
      assertThat(refused.headers().firstValue("RateLimit-Policy")).hasValueSatisfying(v -> assertThat(v).contains("\"free-" + run + "\";q=3"));
      // Unresolved: the lookup throws, names a plan no policy has, or has no tenant: the fallback (blocked, 1) decides.
      assertThat(admitted(c, "/plan/hello", "broken" + id, 5)).isEqualTo(1);
      assertThat(admitted(c, "/plan/hello", "ghost" + id, 5)).isEqualTo(1);
      assertThat(admitted(c, "/plan/hello", "nobody" + id, 5)).isEqualTo(1);
      HttpResponse<String> ghost = c.get("/plan/hello", "X-Tenant", "ghost" + id);
      assertThat(ghost.statusCode()).isEqualTo(429);
      assertThat(ghost.headers().firstValue("RateLimit-Policy")).hasValueSatisfying(v -> assertThat(v).contains("\"blocked-" + run + "\";q=1"));
      // A plan header the client sends is not read: the plan comes from the tenant.
      assertThat(c.get("/plan/hello", "X-Tenant", "initech" + id, "X-Plan", "pro-" + run).statusCode()).isEqualTo(429);

      // The annotation, likewise: its fallback plans-fallback (2) decides what the expression does not.
      assertThat(admitted(c, "/report/acme" + id, null, 10)).isEqualTo(6);
      assertThat(admitted(c, "/report/globex" + id, null, 10)).isEqualTo(3);
      assertThat(admitted(c, "/report/initech" + id, null, 10)).isEqualTo(1);
      assertThat(admitted(c, "/report/broken" + id, null, 5)).isEqualTo(2);
      assertThat(admitted(c, "/report/ghost" + id, null, 5)).isEqualTo(2);
      assertThat(admitted(c, "/report/nobody" + id, null, 5)).isEqualTo(2);
    }
  }

  /** Sends {@code n} requests one after the other and counts the 200s; any answer but 200 and 429 fails. */
  private static int admitted(Client c, String path, String tenant, int n) {
    int ok = 0;
    List<String> unexpected = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      HttpResponse<String> r = tenant == null ? c.get(path) : c.get(path, "X-Tenant", tenant);
      if (r.statusCode() == 200) {
        ok++;
      } else if (r.statusCode() != 429) {
        unexpected.add(r.statusCode() + " " + r.body());
      }
    }
    assertThat(unexpected).as("answers other than 200 and 429 for %s", path).isEmpty();
    return ok;
  }

  private static ConfigurableApplicationContext start(String run, String webType) {
    List<String> args = new ArrayList<>(List.of("--server.port=0", "--spring.main.web-application-type=" + webType,
        "--plans.run=" + run));
    for (String p : RedisStoreTest.redis()) {
      args.add("--" + p);
    }
    String[][] plans = {{"pro-" + run, "6"}, {"free-" + run, "3"}, {"blocked-" + run, "1"}, {"plans-fallback", "2"}};
    for (int i = 0; i < plans.length; i++) {
      args.add("--sluice.policies[" + i + "].name=" + plans[i][0]);
      args.add("--sluice.policies[" + i + "].algorithm=fixed-window");
      args.add("--sluice.policies[" + i + "].limit=" + plans[i][1]);
      args.add("--sluice.policies[" + i + "].window=1h");
    }
    args.add("--sluice.http.rules[0].patterns[0]=/plan/**");
    args.add("--sluice.http.rules[0].policy=blocked-" + run);
    args.add("--sluice.http.rules[0].policy-expression=@plans.of(header('X-Tenant'))");
    args.add("--sluice.http.rules[0].key=header('X-Tenant')");
    return new SpringApplicationBuilder(PlansApp.class).run(args.toArray(new String[0]));
  }
}
