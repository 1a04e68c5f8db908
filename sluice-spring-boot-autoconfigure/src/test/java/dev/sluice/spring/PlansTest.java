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

  /**
   * A plan's numbers changed in the Environment and reloaded ({@link RateLimiterRegistry#reload}, what
   * Spring Cloud's refresh calls) while traffic runs: no count is reset, the tenant over its new lower
   * limit is refused at its next request, a raised limit admits more at once; a bad list changes
   * nothing. Through the rule and the annotation.
   */
  @Test void aReloadedPlanKeepsEveryCount() throws Exception {
    String run = UUID.randomUUID().toString().substring(0, 8);
    String id = "-" + run;
    try (ConfigurableApplicationContext app = start(run, "servlet")) {
      Client c = Apps.client(app);
      RateLimiterRegistry registry = app.getBean(RateLimiterRegistry.class);
      assertThat(c.warmUp("/plan/hello", "X-Tenant", "warm-up" + id).statusCode()).isIn(200, 429);
      assertThat(c.warmUp("/report/warm-up" + id).statusCode()).isIn(200, 429);
      assertThat(admitted(c, "/plan/hello", "acme" + id, 4)).isEqualTo(4);
      assertThat(admitted(c, "/report/acme" + id, null, 4)).isEqualTo(4);

      // Traffic meanwhile: only 200 and 429, whatever the reloads do.
      java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
      List<String> unexpected = new java.util.concurrent.CopyOnWriteArrayList<>();
      Thread traffic = new Thread(() -> {
        for (int i = 0; !stop.get(); i++) {
          int status = c.get("/plan/hello", "X-Tenant", "acme-traffic-" + (i % 50) + id).statusCode();
          if (status != 200 && status != 429) {
            unexpected.add(Integer.toString(status));
          }
        }
      });
      traffic.start();
      try {
        // pro lowered from 6 to 2: acme (4 used) is refused at its next request, by the rule and the annotation.
        String change = reload(app, run, 2);
        assertThat(change).isEqualTo("changed: pro-" + run + "; added: none; removed: none");
        assertThat(registry.policy("pro-" + run).limit()).isEqualTo(2);
        HttpResponse<String> r = c.get("/plan/hello", "X-Tenant", "acme" + id);
        assertThat(r.statusCode()).isEqualTo(429);
        assertThat(r.headers().firstValue("RateLimit-Policy")).hasValueSatisfying(v -> assertThat(v).contains("\"pro-" + run + "\";q=2"));
        assertThat(c.get("/report/acme" + id).statusCode()).isEqualTo(429);
        assertThat(admitted(c, "/plan/hello", "acme-new" + id, 5)).isEqualTo(2);

        // Raised to 10: acme's 4 kept, 6 more admitted.
        reload(app, run, 10);
        assertThat(admitted(c, "/plan/hello", "acme" + id, 10)).isEqualTo(6);
        assertThat(admitted(c, "/report/acme" + id, null, 10)).isEqualTo(6);

        // A bad list (a limit of 0, or a policy in force left out) changes nothing and says why.
        Throwable bad = org.assertj.core.api.Assertions.catchThrowable(() -> reload(app, run, 0));
        assertThat(bad).isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("sluice.policies: policy #1 ('pro-" + run + "')");
        assertThat(registry.policy("pro-" + run).limit()).isEqualTo(10);
        app.getEnvironment().getPropertySources().addFirst(new org.springframework.core.env.MapPropertySource("reload",
            java.util.Map.of("sluice.policies[0].name", "pro-" + run, "sluice.policies[0].algorithm", "fixed-window",
                "sluice.policies[0].limit", "10", "sluice.policies[0].window", "1h")));
        bad = org.assertj.core.api.Assertions.catchThrowable(registry::reload);
        assertThat(bad).isInstanceOf(IllegalArgumentException.class)
            .hasMessage("sluice.policies: the reloaded list has no policy 'free-" + run + "', which is in force (rules, "
                + "@RateLimited and limiter beans name it); keep it, or restart to remove it. Nothing changed");
        assertThat(admitted(c, "/plan/hello", "globex" + id, 5)).isEqualTo(3);
      } finally {
        stop.set(true);
        traffic.join(60_000);
      }
      assertThat(unexpected).isEmpty();
    }
  }

  /** Stands for Spring Cloud's EnvironmentChangeEvent (not on the class path): its keys, read by name. */
  public static final class Keys {
    private final java.util.Set<String> keys;

    Keys(String... keys) {
      this.keys = java.util.Set.of(keys);
    }

    public java.util.Set<String> getKeys() {
      return keys;
    }
  }

  /** Which refresh events reload: those whose changed keys are under sluice.policies. */
  @Test void aRefreshReloadsOnlyWhenItsKeysAreUnderSluicePolicies() {
    assertThat(SluiceAutoConfiguration.RefreshListener.touchesPolicies(new Keys("sluice.policies[0].limit"))).isTrue();
    assertThat(SluiceAutoConfiguration.RefreshListener.touchesPolicies(new Keys("server.port", "sluice.policies[2].window"))).isTrue();
    assertThat(SluiceAutoConfiguration.RefreshListener.touchesPolicies(new Keys("sluice.http.order", "sluice.policiesx"))).isFalse();
    assertThat(SluiceAutoConfiguration.RefreshListener.touchesPolicies(new Object())).isTrue(); // keys unreadable: reload, harmless
  }

  /** Puts the run's plan list with pro at {@code proLimit} first in the Environment and reloads it. */
  private static String reload(ConfigurableApplicationContext app, String run, int proLimit) {
    java.util.Map<String, Object> m = new java.util.LinkedHashMap<>();
    String[][] plans = plans(run);
    for (int i = 0; i < plans.length; i++) {
      m.put("sluice.policies[" + i + "].name", plans[i][0]);
      m.put("sluice.policies[" + i + "].algorithm", "fixed-window");
      m.put("sluice.policies[" + i + "].limit", i == 0 ? Integer.toString(proLimit) : plans[i][1]);
      m.put("sluice.policies[" + i + "].window", "1h");
    }
    var sources = app.getEnvironment().getPropertySources();
    sources.remove("reload");
    sources.addFirst(new org.springframework.core.env.MapPropertySource("reload", m));
    return app.getBean(RateLimiterRegistry.class).reload();
  }

  private static String[][] plans(String run) {
    return new String[][] {{"pro-" + run, "6"}, {"free-" + run, "3"}, {"blocked-" + run, "1"}, {"plans-fallback", "2"}};
  }

  private static void plansAreExactPerTenant(String webType) {
    String run = UUID.randomUUID().toString().substring(0, 8);
    String id = "-" + run;
    try (ConfigurableApplicationContext app = start(run, webType)) {
      Client c = Apps.client(app);
      assertThat(c.warmUp("/plan/hello", "X-Tenant", "warm-up" + id).statusCode()).isIn(200, 429);
      assertThat(c.warmUp("/report/warm-up" + id).statusCode()).isIn(200, 429); // the annotated method's first call
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
    String[][] plans = plans(run);
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
