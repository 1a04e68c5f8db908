package dev.sluice.spring;

import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.reactor.netty.NettyReactiveWebServerFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * WebFlux on Reactor Netty, whose event loops must never block (Tomcat, on the class path for the
 * MVC tests, would otherwise serve WebFlux too). Spring Boot 4's factory, which moved to {@code
 * org.springframework.boot.reactor.netty}; sluice-spring-boot-autoconfigure has the Boot 3.5 copy.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
public class ReactiveServer {
  @Bean
  NettyReactiveWebServerFactory nettyReactiveWebServerFactory() {
    return new NettyReactiveWebServerFactory();
  }
}
