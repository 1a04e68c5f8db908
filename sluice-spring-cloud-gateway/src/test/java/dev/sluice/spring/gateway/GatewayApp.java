package dev.sluice.spring.gateway;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.cloud.gateway.filter.ratelimit.KeyResolver;
import org.springframework.cloud.gateway.route.RouteLocator;
import org.springframework.cloud.gateway.route.builder.RouteLocatorBuilder;
import org.springframework.context.annotation.Bean;
import reactor.core.publisher.Mono;

/** The test gateway: the routes of application.yml, one in the Java DSL, and a key resolver on the X-Client header. */
@SpringBootApplication
public class GatewayApp {
  /** The client, as the test names it: the X-Client header. */
  @Bean
  KeyResolver clientKey() {
    return exchange -> Mono.justOrEmpty(exchange.getRequest().getHeaders().getFirst("X-Client"));
  }

  /** A route in the Java DSL: the same filter, its settings built in code. */
  @Bean
  RouteLocator dslRoutes(RouteLocatorBuilder routes, SluiceGatewayFilterFactory sluice, SluiceGatewayRateLimiter sluiceRateLimiter,
      KeyResolver clientKey, @Value("${downstream.url}") String downstream) {
    return routes.routes()
        .route("dsl", r -> r.path("/dsl/**")
            .filters(f -> f.filter(sluice.apply(new SluiceGatewayFilterFactory.Config().setPolicies("a", "b")
                .setKeyResolver(clientKey).setRefundOn(java.util.List.of("404")))))
            .uri(downstream))
        .route("dsl-rrl", r -> r.path("/dsl-rrl/**")
            .filters(f -> f.requestRateLimiter(c -> c.setRateLimiter(sluiceRateLimiter.forPolicy("b")).setKeyResolver(clientKey)))
            .uri(downstream))
        .build();
  }
}
