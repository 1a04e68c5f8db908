package dev.sluice.spring.gateway;

import dev.sluice.spring.SluiceAutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;

/**
 * Sluice in Spring Cloud Gateway Server MVC (the servlet gateway): the {@code Sluice} filter for
 * routes declared in configuration ({@code spring.cloud.gateway.server.webmvc.routes}), found by the
 * gateway through this {@code FilterSupplier} bean. Routes of the Java DSL use
 * {@link SluiceFilterFunctions#sluice} directly. Its limiters are the Spring starter's.
 */
@AutoConfiguration(after = SluiceAutoConfiguration.class)
@ConditionalOnClass(name = "org.springframework.cloud.gateway.server.mvc.filter.FilterSupplier")
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnProperty(prefix = "sluice.gateway", name = "enabled", matchIfMissing = true)
public class SluiceMvcGatewayAutoConfiguration {
  /** {@code - Sluice=policy,...} in a route's {@code filters}. */
  @Bean
  @ConditionalOnMissingBean
  public SluiceFilterFunctions.FilterSupplier sluiceFilterFunctionsSupplier() {
    return new SluiceFilterFunctions.FilterSupplier();
  }
}
