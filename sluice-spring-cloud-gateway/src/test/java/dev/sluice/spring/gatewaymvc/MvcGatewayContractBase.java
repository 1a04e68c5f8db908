package dev.sluice.spring.gatewaymvc;


import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.RateLimiter;
import dev.sluice.spring.RateLimiterRegistry;
import dev.sluice.spring.gateway.Downstream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Tag;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * A servlet gateway (Server MVC) on a real port in front of a real downstream server, started once
 * for a test class ({@link #gateway}), and a plain HTTP client. Tagged {@code server-mvc}: its own
 * surefire execution, whose class path has no reactive gateway.
 */
@Tag("server-mvc")
abstract class MvcGatewayContractBase {
  static final ObjectMapper JSON = new ObjectMapper();
  static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();
  /** The headers a verdict writes. */
  static final List<String> VERDICT_HEADERS = List.of("Retry-After", "RateLimit-Policy", "RateLimit", "X-RateLimit-Limit",
      "X-RateLimit-Remaining", "X-RateLimit-Reset", "Content-Type");

  static Downstream downstream;
  static ConfigurableApplicationContext app;
  static String base;

  /** Starts the gateway of this store once for the class. */
  static void gateway(Class<?>[] beans, String... properties) throws Exception {
    downstream = new Downstream();
    List<String> args = new ArrayList<>(List.of("--server.port=0", "--downstream.url=" + downstream.url()));
    for (String p : properties) {
      args.add("--" + p);
    }
    app = new SpringApplicationBuilder(MvcGatewayApp.class).sources(beans).web(WebApplicationType.SERVLET)
        .run(args.toArray(new String[0]));
    base = "http://127.0.0.1:" + app.getEnvironment().getRequiredProperty("local.server.port", Integer.class);
  }

  @AfterAll static void stop() {
    if (app != null) {
      app.close();
      app = null;
    }
    if (downstream != null) {
      downstream.close();
      downstream = null;
    }
  }

  static String id() {
    return UUID.randomUUID().toString();
  }

  /** GET {@code path} of the gateway as client {@code client} (the X-Client header; none when null). */
  static HttpResponse<String> get(String path, String client) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(20));
    if (client != null) {
      b.header("X-Client", client);
    }
    return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  static RateLimiter limiter(String policy) {
    return app.getBean(RateLimiterRegistry.class).limiter(policy);
  }
}
