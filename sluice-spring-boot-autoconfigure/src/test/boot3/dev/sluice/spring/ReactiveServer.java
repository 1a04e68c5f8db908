package dev.sluice.spring;

import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.web.embedded.netty.NettyReactiveWebServerFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * WebFlux on Reactor Netty, whose event loops must never block (Tomcat, on the class path for the
 * MVC tests, would otherwise serve WebFlux too, on threads that may block). Spring Boot 3.5's class;
 * sluice-spring-boot4-tests has this file for Boot 4, where the factory moved.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
public class ReactiveServer {
  @Bean
  NettyReactiveWebServerFactory nettyReactiveWebServerFactory() {
    return new NettyReactiveWebServerFactory();
  }
}
