package dev.sluice.spring.gatewaymvc;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;

/** A route declared in configuration whose Sluice settings are wrong: the servlet gateway does not start, and says why. */
@Tag("server-mvc")
class MvcRouteSettingsTest {
  static final String ROUTE = "--spring.cloud.gateway.server.webmvc.routes[0].";

  @Test void aYamlRouteWithABadSettingStopsTheApplication() {
    // A list from the command line replaces application.yml's: this one route only.
    assertThatThrownBy(() -> new SpringApplicationBuilder(MvcGatewayApp.class).web(WebApplicationType.SERVLET).run(
        "--server.port=0", "--downstream.url=http://127.0.0.1:1",
        ROUTE + "id=bad", ROUTE + "uri=http://127.0.0.1:1", ROUTE + "predicates[0]=Path=/bad/**",
        ROUTE + "filters[0].name=Sluice", ROUTE + "filters[0].args.policies=a,b", ROUTE + "filters[0].args.refund-on=sometimes"))
        .hasStackTraceContaining("Sluice filter [a, b]: refund-on 'sometimes' is unknown");
  }
}
