package dev.sluice.spring.gateway;

import dev.sluice.spring.RateLimiterRegistry;
import dev.sluice.spring.SluiceAutoConfiguration;
import dev.sluice.spring.SluiceProperties;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.cloud.gateway.filter.ratelimit.AbstractRateLimiter;
import org.springframework.cloud.gateway.support.ConfigurationService;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Fallback;

/**
 * Sluice in Spring Cloud Gateway (the reactive server): the {@code Sluice} route filter and the
 * {@code sluiceRateLimiter} bean of the gateway's {@code RequestRateLimiter}, on the limiters of the
 * Spring starter ({@code sluice.policies}, {@code sluice.store}). Before the gateway's own
 * auto-configuration, whose {@code RequestRateLimiter} exists only when a rate limiter bean does.
 */
@AutoConfiguration(after = SluiceAutoConfiguration.class,
    beforeName = "org.springframework.cloud.gateway.config.GatewayAutoConfiguration")
@ConditionalOnClass(AbstractRateLimiter.class)
@ConditionalOnProperty(prefix = "sluice.gateway", name = "enabled", matchIfMissing = true)
public class SluiceGatewayAutoConfiguration {
  /** The {@code Sluice} route filter ({@code - Sluice=policy,...}). */
  @Bean
  @ConditionalOnMissingBean
  public SluiceGatewayFilterFactory sluiceGatewayFilterFactory(RateLimiterRegistry registry, SluiceProperties props,
      BeanFactory beans) {
    return new SluiceGatewayFilterFactory(registry, props, beans);
  }

  /**
   * {@code rate-limiter: "#{@sluiceRateLimiter}"} of the gateway's {@code RequestRateLimiter}. A
   * fallback candidate: beside the gateway's own {@code RedisRateLimiter} (an application with
   * Spring Data Redis Reactive has one) that one stays the filter's default limiter, as routes
   * written for it expect, and the gateway still starts (two limiters and no default would stop it).
   */
  @Bean(name = "sluiceRateLimiter")
  @Fallback
  @ConditionalOnMissingBean(SluiceGatewayRateLimiter.class)
  public SluiceGatewayRateLimiter sluiceRateLimiter(RateLimiterRegistry registry, ConfigurationService configurationService) {
    return new SluiceGatewayRateLimiter(registry, configurationService);
  }
}
