package dev.sluice.spring.gateway;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/** Test gateways started by hand on port 0, routing to a {@link Downstream}, and a plain HTTP client. */
final class Gateways {
  static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();

  private Gateways() {}

  /** The gateway of {@link GatewayApp} and {@code beans}, in front of {@code downstream}, with {@code properties}. */
  static ConfigurableApplicationContext start(Downstream downstream, Class<?>[] beans, String... properties) {
    List<String> args = new ArrayList<>(List.of("--server.port=0", "--downstream.url=" + downstream.url()));
    for (String p : properties) {
      args.add("--" + p);
    }
    return new SpringApplicationBuilder(GatewayApp.class).sources(beans).run(args.toArray(new String[0]));
  }

  static int port(ConfigurableApplicationContext app) {
    return app.getEnvironment().getRequiredProperty("local.server.port", Integer.class);
  }

  /** GET {@code base + path} as client {@code client} (the X-Client header; none when null). */
  static HttpResponse<String> get(String base, String path, String client) throws IOException, InterruptedException {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(20));
    if (client != null) {
      b.header("X-Client", client);
    }
    return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }
}
