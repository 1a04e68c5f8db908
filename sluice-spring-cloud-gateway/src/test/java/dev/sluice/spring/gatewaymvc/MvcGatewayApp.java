package dev.sluice.spring.gatewaymvc;

import static org.springframework.cloud.gateway.server.mvc.filter.BeforeFilterFunctions.uri;
import static org.springframework.cloud.gateway.server.mvc.handler.GatewayRouterFunctions.route;
import static org.springframework.cloud.gateway.server.mvc.handler.HandlerFunctions.http;

import dev.sluice.http.HttpRateLimit;
import dev.sluice.http.KeyResolver;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.http.RateLimitServletFilter;
import dev.sluice.spring.RateLimiterRegistry;
import dev.sluice.spring.gateway.SluiceFilterFunctions;
import java.util.List;
import java.util.function.Function;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.web.servlet.function.RouterFunction;
import org.springframework.web.servlet.function.RouterFunctions;
import org.springframework.web.servlet.function.ServerRequest;
import org.springframework.web.servlet.function.ServerResponse;

/**
 * The test's servlet gateway (Server MVC): the routes of application.yml ({@code spring.cloud.gateway.server.webmvc}),
 * one in the Java DSL, and beside them sluice-http's own servlet filter on {@code /limited} (policy {@code hour},
 * the X-Client header), the front end whose answer the gateway's must equal.
 */
@SpringBootApplication
public class MvcGatewayApp {
  /** The client, as the test names it: the X-Client header. */
  @Bean
  Function<ServerRequest, String> clientKey() {
    return request -> request.headers().firstHeader("X-Client");
  }

  /** A route in the Java DSL: the same filter, its settings built in code. */
  @Bean
  RouterFunction<ServerResponse> dslRoute(Function<ServerRequest, String> clientKey, @Value("${downstream.url}") String downstream) {
    return route("dsl").GET("/dsl/**", http()).before(uri(downstream))
        .filter(SluiceFilterFunctions.sluice(c -> c.setPolicies("a", "b").setKeyResolver(clientKey).setRefundOn(List.of("404"))))
        .build()
        .and(route("dsl-header").GET("/dsl-header/**", http()).before(uri(downstream))
            .filter(SluiceFilterFunctions.sluice(c -> c.setPolicies("b").setKeyResolver(KeyResolver.header("X-Client"))))
            .build())
        // A handler of the application's own behind the filter: its ServerResponse's headers are read-only.
        .and(route("local").GET("/local/**", r -> ServerResponse.ok().body("local"))
            .filter(SluiceFilterFunctions.sluice(c -> c.setPolicies("b").setKeyResolver(clientKey))).build())
        // A policy that is not there: known on the route's first request only (see SluiceFilterFunctions).
        .and(route("nope").GET("/nope/**", http()).before(uri(downstream)).filter(SluiceFilterFunctions.sluice("nope")).build());
  }

  /** The plain answer behind sluice-http's servlet filter. */
  @Bean
  RouterFunction<ServerResponse> limitedEndpoint() {
    return RouterFunctions.route().GET("/limited", r -> ServerResponse.ok().build()).build();
  }

  /** sluice-http's servlet filter on the same limiter as the gateway's route /hour. */
  @Bean
  FilterRegistrationBean<RateLimitServletFilter> servletFilter(RateLimiterRegistry registry) {
    FilterRegistrationBean<RateLimitServletFilter> b = new FilterRegistrationBean<>(new RateLimitServletFilter(
        HttpRateLimit.builder(registry.limiter("hour")).keyResolver(KeyResolver.header("X-Client")).headers(RateLimitHeaders.all()).build()));
    b.addUrlPatterns("/limited");
    return b;
  }
}
