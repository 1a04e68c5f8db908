package dev.sluice.spring;

import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.kernel.PolicyWords;
import dev.sluice.kernel.PostgresStore;
import dev.sluice.kernel.RedisStore;
import dev.sluice.kernel.Store;
import dev.sluice.memory.MemoryRateLimiter;
import dev.sluice.micrometer.RateLimitMetrics;
import java.util.List;
import javax.sql.DataSource;
import org.springframework.aop.Advisor;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.context.properties.source.IterableConfigurationPropertySource;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.beans.factory.support.AutowireCandidateQualifier;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.beans.factory.support.BeanDefinitionRegistryPostProcessor;
import org.springframework.beans.factory.support.RootBeanDefinition;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.EnvironmentAware;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;
import io.lettuce.core.RedisURI;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The Sluice auto-configuration: {@link SluiceProperties} ({@code sluice.*}), the store, a
 * {@link RateLimiterRegistry} and one {@link RateLimiter} bean per policy (qualified by the policy's
 * name), {@link RateLimited}, the MVC filter or WebFlux {@code WebFilter}, the 429/503 answer to a
 * {@code RateLimitExceededException}, the {@code ratelimits} endpoint, the store's health and the
 * Micrometer meters of {@code sluice-micrometer}.
 */
@AutoConfiguration(afterName = {
    // Spring Boot 3.5, then the same two in Boot 4 (a name not on the class path is ignored).
    "org.springframework.boot.autoconfigure.data.redis.RedisAutoConfiguration",
    "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
    "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration",
    "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration"})
@EnableConfigurationProperties(SluiceProperties.class)
public class SluiceAutoConfiguration {
  /** The policies of {@code sluice.policies}, through the shape the service's policy file uses. */
  static List<Policy> policies(List<PolicyEntry> entries, Environment env) {
    if (entries == null || entries.isEmpty()) {
      return List.of();
    }
    List<java.util.Map<String, Object>> fields = new java.util.ArrayList<>();
    for (PolicyEntry e : entries) {
      fields.add(e.fields());
    }
    unboundFields(env, fields);
    return PolicyWords.policies(fields, "sluice.policies");
  }

  /**
   * Adds to each entry the properties written under {@code sluice.policies[i]} that the binder
   * dropped (no {@link PolicyEntry} field has their name: {@code windw: 1m}), so that the one shape
   * refuses them as the service's policy file does ("unknown parameter 'windw'"), rather than
   * reporting the parameter they were meant to be as missing.
   */
  private static void unboundFields(Environment env, List<java.util.Map<String, Object>> fields) {
    if (env == null) {
      return;
    }
    ConfigurationPropertyName policies = ConfigurationPropertyName.of("sluice.policies");
    for (ConfigurationPropertySource source : ConfigurationPropertySources.get(env)) {
      if (!(source instanceof IterableConfigurationPropertySource iterable)) {
        continue;
      }
      iterable.stream().filter(n -> n.getNumberOfElements() == 4 && policies.isAncestorOf(n) && n.isNumericIndex(2))
          .forEach(n -> {
            int i = Integer.parseInt(n.getElement(2, ConfigurationPropertyName.Form.UNIFORM));
            String field = n.getLastElement(ConfigurationPropertyName.Form.ORIGINAL);
            if (i < fields.size() && !PolicyEntry.FIELDS.contains(n.getLastElement(ConfigurationPropertyName.Form.UNIFORM))) {
              fields.get(i).putIfAbsent(field, String.valueOf(source.getConfigurationProperty(n).getValue()));
            }
          });
    }
  }

  /** The names (Boot's uniform form) an HTTP rule takes, read off {@link SluiceProperties.Rule}'s fields. */
  static final java.util.Set<String> RULE_FIELDS = java.util.Arrays.stream(SluiceProperties.Rule.class.getDeclaredFields())
      .filter(f -> !java.lang.reflect.Modifier.isStatic(f.getModifiers()))
      .map(f -> f.getName().toLowerCase(java.util.Locale.ROOT)).collect(java.util.stream.Collectors.toUnmodifiableSet());

  /**
   * Refuses a property written under {@code sluice.http.rules[i]} that no rule field has
   * ({@code execute-condtion}), which Spring's binder would drop silently: the rule would charge
   * requests its author meant to skip.
   */
  static void unknownRuleProperties(Environment env) {
    if (env == null) {
      return;
    }
    ConfigurationPropertyName rules = ConfigurationPropertyName.of("sluice.http.rules");
    for (ConfigurationPropertySource source : ConfigurationPropertySources.get(env)) {
      if (!(source instanceof IterableConfigurationPropertySource iterable)) {
        continue;
      }
      iterable.stream().filter(n -> n.getNumberOfElements() >= 5 && rules.isAncestorOf(n) && n.isNumericIndex(3)
              && !RULE_FIELDS.contains(n.getElement(4, ConfigurationPropertyName.Form.UNIFORM)))
          .findFirst().ifPresent(n -> {
            String i = n.getElement(3, ConfigurationPropertyName.Form.UNIFORM);
            String field = n.getElement(4, ConfigurationPropertyName.Form.ORIGINAL);
            throw new IllegalArgumentException("sluice.http.rules[" + i + "]." + field + " is not a rule property (its value '"
                + source.getConfigurationProperty(n).getValue() + "'); a rule takes "
                + String.join(", ", new java.util.TreeSet<>(ruleWords())));
          });
    }
  }

  /** The rule properties as written in YAML: {@code execute-condition}. */
  private static java.util.List<String> ruleWords() {
    return java.util.Arrays.stream(SluiceProperties.Rule.class.getDeclaredFields())
        .filter(f -> !java.lang.reflect.Modifier.isStatic(f.getModifiers()))
        .map(f -> f.getName().replaceAll("([A-Z])", "-$1").toLowerCase(java.util.Locale.ROOT)).toList();
  }

  /** The Micrometer meters every limiter reports to; bound to the application's registries by Spring Boot. */
  @Bean
  @ConditionalOnMissingBean
  public RateLimitMetrics sluiceRateLimitMetrics() {
    return RateLimitMetrics.builder().build();
  }

  /** The in-process store, unless another is configured. */
  @Bean
  @ConditionalOnMissingBean(Store.class)
  @ConditionalOnProperty(prefix = "sluice", name = "store", havingValue = "memory", matchIfMissing = true)
  public Store sluiceMemoryStore(SluiceProperties props) {
    return Store.memory(props.getMaxKeys(), Ticker.system());
  }

  /** The limiters, one per policy, in the kernel's policy table over the store. */
  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean
  public RateLimiterRegistry sluiceRateLimiters(SluiceProperties props, Store store,
      ObjectProvider<RateLimitMetrics> metrics, ObjectProvider<RateLimitListener> listeners, Environment env) {
    props.failureModes(); // checked whichever store runs: a setting is never accepted unread
    RateLimitMetrics m = metrics.getIfAvailable();
    // The meters, then every RateLimitListener bean of the application (Resilience4j's event
    // consumers), in order, each guarded: one that throws is logged and the others are still told.
    java.util.List<RateLimitListener> told = new java.util.ArrayList<>();
    if (m != null) {
      told.add(m);
    }
    listeners.orderedStream().filter(l -> !(l instanceof RateLimitMetrics)).forEach(told::add);
    RateLimitListener next = RateLimitListener.all(told, true);
    RateLimitEvents events = new RateLimitEvents(RateLimitEvents.size(props.getEventBufferSize()), next, java.time.Clock.systemUTC());
    if (events.keeps()) {
      next = events; // the events endpoint's buffer, then the meters
    }
    // The starter has always named PostgreSQL by its setting, sluice.store=jdbc (the endpoint, the health).
    boolean jdbc = "postgres".equals(store.name());
    RateLimiterRegistry r;
    try {
      r = new RateLimiterRegistry(jdbc ? "jdbc" : store.name(), store, policies(props.getPolicies(), env), next, events, env);
    } catch (IllegalStateException e) {
      if (jdbc && e.getCause() instanceof java.sql.SQLException) { // the first limiter's schema (apply-schema)
        throw new IllegalStateException("sluice.jdbc.apply-schema: " + e.getMessage(), e.getCause());
      }
      throw e;
    }
    if (m != null) {
      for (RateLimiter l : r.limiters().values()) {
        if (l instanceof MemoryRateLimiter mem) {
          m.trackedKeys(l.policy().name(), mem::trackedKeys);
        }
      }
    }
    return r;
  }

  /**
   * Spring Cloud's refresh ({@code ContextRefresher}, {@code /actuator/refresh}, a config server's
   * push) publishes an {@code EnvironmentChangeEvent} naming the changed keys: one under
   * {@code sluice.policies} reloads them ({@link RateLimiterRegistry#reload}), counts kept. A bad
   * list keeps the policies in force and is logged at ERROR with the entry and the rule. Only when
   * Spring Cloud Context is on the class path; the event is read by its name, with no dependency.
   */
  @Bean
  @ConditionalOnClass(name = RefreshListener.EVENT)
  public static org.springframework.context.ApplicationListener<org.springframework.context.ApplicationEvent> sluiceRefreshListener(
      ObjectProvider<RateLimiterRegistry> registry) {
    return new RefreshListener(registry);
  }

  /** Reloads sluice.policies on Spring Cloud's EnvironmentChangeEvent when its keys touch them. */
  static final class RefreshListener implements org.springframework.context.ApplicationListener<org.springframework.context.ApplicationEvent> {
    static final String EVENT = "org.springframework.cloud.context.environment.EnvironmentChangeEvent";
    private static final System.Logger LOG = System.getLogger(RefreshListener.class.getName());
    private final ObjectProvider<RateLimiterRegistry> registry;

    RefreshListener(ObjectProvider<RateLimiterRegistry> registry) {
      this.registry = registry;
    }

    @Override public void onApplicationEvent(org.springframework.context.ApplicationEvent event) {
      if (!event.getClass().getName().equals(EVENT) || !touchesPolicies(event)) {
        return;
      }
      RateLimiterRegistry r = registry.getIfAvailable();
      if (r == null) {
        return;
      }
      try {
        r.reload();
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.ERROR, "sluice.policies not reloaded, the policies in force kept: " + e.getMessage(), e);
      }
    }

    /** Whether the event's keys ({@code getKeys()}) name a property under sluice.policies; true when they cannot be read. */
    static boolean touchesPolicies(Object event) {
      try {
        Object keys = event.getClass().getMethod("getKeys").invoke(event);
        if (keys instanceof java.util.Collection<?> c) {
          ConfigurationPropertyName policies = ConfigurationPropertyName.of("sluice.policies");
          for (Object k : c) {
            ConfigurationPropertyName n = ConfigurationPropertyName.adapt(String.valueOf(k), '.');
            if (policies.equals(n) || policies.isAncestorOf(n)) {
              return true;
            }
          }
          return false;
        }
      } catch (ReflectiveOperationException | RuntimeException e) {
        // read as touching them: a reload that changes nothing costs nothing
      }
      return true;
    }
  }

  /** Registers each policy's limiter as a bean, qualified by the policy's name. */
  @Bean
  public static BeanDefinitionRegistryPostProcessor sluicePolicyLimiters() {
    return new PolicyLimiterBeans();
  }

  /** {@link RateLimited} on any bean. */
  @Bean
  @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
  public static Advisor sluiceRateLimitedAdvisor(ObjectProvider<RateLimiterRegistry> registry, BeanFactory beans) {
    return new DefaultPointcutAdvisor(new RateLimitedInterceptor.Pointcut(), new LazyInterceptor(registry, beans));
  }

  /** Stops the application at start when a {@link RateLimited} names a policy {@code sluice.policies} lacks. */
  @Bean
  @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
  static SmartInitializingSingleton sluiceRateLimitedPolicyCheck(ConfigurableListableBeanFactory beans,
      ObjectProvider<RateLimiterRegistry> registry) {
    return new RateLimitedInterceptor.PolicyCheck(beans, registry);
  }

  /** {@code sluice.store=redis}: the application's Lettuce factory when there is one, else {@code sluice.redis.url}. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "dev.sluice.redis.RedisRateLimiter")
  @ConditionalOnProperty(prefix = "sluice", name = "store", havingValue = "redis")
  static class RedisStoreConfiguration {
    /** With Spring Data Redis: its Lettuce factory when the application has one (looked up when the store is built). */
    @Configuration(proxyBeanMethods = false)
    // A member class is registered whatever its enclosing class's conditions say: it repeats them.
    @ConditionalOnClass(value = LettuceConnectionFactory.class, name = "dev.sluice.redis.RedisRateLimiter")
    @ConditionalOnProperty(prefix = "sluice", name = "store", havingValue = "redis")
    static class WithSpringDataRedis {
      @Bean
      @ConditionalOnMissingBean(Store.class)
      Store sluiceRedisStore(ObjectProvider<LettuceConnectionFactory> factories, SluiceProperties props) {
        LettuceConnectionFactory factory = factories.getIfUnique();
        if (factory == null) {
          return redisFromUrl(props);
        }
        if (!factory.isRunning()) {
          factory.start();
        }
        // Spring's standalone client has no default URI (it names one per connection): give it the factory's.
        RedisURI uri = null;
        if (factory.getSentinelConfiguration() != null) {
          throw new IllegalStateException("sluice.store=redis with a Sentinel connection factory: give sluice.redis.url "
              + "a redis-sentinel:// URI and leave the factory to the application");
        }
        if (factory.getClusterConfiguration() == null) {
          RedisStandaloneConfiguration c = factory.getStandaloneConfiguration();
          RedisURI.Builder b = RedisURI.builder().withHost(c.getHostName()).withPort(c.getPort())
              .withDatabase(c.getDatabase()).withSsl(factory.isUseSsl());
          if (c.getPassword().isPresent()) {
            b.withAuthentication(c.getUsername(), c.getPassword().get());
          }
          uri = b.build();
        }
        return RedisStore.onClient(factory.getNativeClient(), uri, false, props.failureModes(), props.getTimeout());
      }
    }

    /** Without Spring Data Redis: {@code sluice.redis.url}. */
    @Bean
    @ConditionalOnMissingBean(Store.class)
    Store sluiceRedisUrlStore(SluiceProperties props) {
      return redisFromUrl(props);
    }

    /** A client of the store's own on {@code sluice.redis.url}, shut down with it. */
    static Store redisFromUrl(SluiceProperties props) {
      try {
        return RedisStore.fromUrl(props.getRedis().getUrl(), props.failureModes(), props.getTimeout());
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("sluice.redis.url " + e.getMessage(), e);
      }
    }
  }

  /** {@code sluice.store=jdbc}: PostgreSQL through the application's DataSource. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "dev.sluice.jdbc.JdbcRateLimiter")
  @ConditionalOnProperty(prefix = "sluice", name = "store", havingValue = "jdbc")
  static class JdbcStoreConfiguration {
    @Bean
    @ConditionalOnMissingBean(Store.class)
    Store sluiceJdbcStore(DataSource dataSource, SluiceProperties props) {
      try {
        return PostgresStore.onDataSource(dataSource, props.getJdbc().getTable(), props.getJdbc().isApplySchema(),
            props.failureModes(), props.getTimeout());
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("sluice.jdbc.table: " + e.getMessage(), e);
      }
    }
  }

  /** Spring MVC: the servlet filter of {@code sluice.http.rules}. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
  @ConditionalOnClass(name = {"org.springframework.web.filter.OncePerRequestFilter", "jakarta.servlet.Filter"})
  @ConditionalOnProperty(prefix = "sluice.http", name = "enabled", matchIfMissing = true)
  static class ServletConfiguration {
    @Bean
    FilterRegistrationBean<SluiceServletFilter> sluiceServletFilter(SluiceProperties props, RateLimiterRegistry registry,
        BeanFactory beans, Environment env, ObjectProvider<io.micrometer.core.instrument.MeterRegistry> meters) {
      unknownRuleProperties(env);
      HttpRules rules = new HttpRules(props.getHttp(), registry, beans, meters.getIfUnique());
      FilterRegistrationBean<SluiceServletFilter> b = new FilterRegistrationBean<>(new SluiceServletFilter(rules));
      b.setOrder(props.getHttp().getOrder());
      b.setEnabled(!rules.isEmpty());
      return b;
    }
  }

  /** WebFlux: the {@code WebFilter} of {@code sluice.http.rules}, on the limiters' async methods. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
  @ConditionalOnClass(name = "org.springframework.web.server.WebFilter")
  @ConditionalOnProperty(prefix = "sluice.http", name = "enabled", matchIfMissing = true)
  static class ReactiveConfiguration {
    @Bean
    SluiceWebFilter sluiceWebFilter(SluiceProperties props, RateLimiterRegistry registry, BeanFactory beans, Environment env,
        ObjectProvider<io.micrometer.core.instrument.MeterRegistry> meters) {
      unknownRuleProperties(env);
      return new SluiceWebFilter(new HttpRules(props.getHttp(), registry, beans, meters.getIfUnique()), props.getHttp().getOrder());
    }
  }

  /** The 429/503 answer to a refusal thrown from a controller, MVC or WebFlux. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnWebApplication
  @ConditionalOnClass(name = "org.springframework.web.bind.annotation.ControllerAdvice")
  static class RefusalAnswerConfiguration {
    @Bean
    RateLimitExceededHandler sluiceRateLimitExceededHandler() {
      return new RateLimitExceededHandler();
    }
  }

  /** Actuator: the {@code ratelimits} endpoint. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(Endpoint.class)
  static class ActuatorConfiguration {
    @Bean
    @ConditionalOnMissingBean
    RateLimitsEndpoint sluiceRateLimitsEndpoint(RateLimiterRegistry registry) {
      return new RateLimitsEndpoint(registry);
    }

    @Bean
    @ConditionalOnMissingBean
    RateLimitEventsEndpoint sluiceRateLimitEventsEndpoint(RateLimiterRegistry registry) {
      return new RateLimitEventsEndpoint(registry.events(), registry);
    }
  }

  // A shared store's health. Boot 3.5 and Boot 4 keep the health API in different packages, so each
  // has its own configuration, selected by class name (never a class literal): this one jar runs on either.

  /** A shared store's health on Spring Boot 3.5. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.actuate.health.HealthIndicator")
  @ConditionalOnExpression("!'${sluice.store:memory}'.equalsIgnoreCase('memory')")
  static class Boot3HealthConfiguration {
    @Bean(name = "sluiceHealthIndicator")
    StoreHealthIndicator sluiceHealthIndicator(RateLimiterRegistry registry) {
      return new StoreHealthIndicator(registry);
    }
  }

  /** A shared store's health on Spring Boot 4 ({@code spring-boot-health}). */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
  @ConditionalOnExpression("!'${sluice.store:memory}'.equalsIgnoreCase('memory')")
  static class Boot4HealthConfiguration {
    @Bean(name = "sluiceHealthIndicator")
    Boot4StoreHealthIndicator sluiceHealthIndicator(RateLimiterRegistry registry) {
      return new Boot4StoreHealthIndicator(registry);
    }
  }

  /** The interceptor, with the registry looked up at the first call (advisors are created early). */
  private static final class LazyInterceptor implements org.aopalliance.intercept.MethodInterceptor {
    private final ObjectProvider<RateLimiterRegistry> registry;
    private final BeanFactory beans;
    private volatile RateLimitedInterceptor delegate;

    LazyInterceptor(ObjectProvider<RateLimiterRegistry> registry, BeanFactory beans) {
      this.registry = registry;
      this.beans = beans;
    }

    @Override public Object invoke(org.aopalliance.intercept.MethodInvocation mi) throws Throwable {
      RateLimitedInterceptor d = delegate;
      if (d == null) {
        synchronized (this) {
          d = delegate;
          if (d == null) {
            d = new RateLimitedInterceptor(registry.getObject(), beans);
            delegate = d;
          }
        }
      }
      return d.invoke(mi);
    }
  }

  /** One bean per policy: {@code @Qualifier("login") RateLimiter login}, the registry's limiter. */
  static final class PolicyLimiterBeans implements BeanDefinitionRegistryPostProcessor, EnvironmentAware {
    private Environment environment;

    @Override public void setEnvironment(Environment environment) {
      this.environment = environment;
    }

    @Override public void postProcessBeanDefinitionRegistry(BeanDefinitionRegistry registry) {
      List<PolicyEntry> entries = Binder.get(environment)
          .bind("sluice.policies", Bindable.listOf(PolicyEntry.class)).orElse(List.of());
      for (Policy p : policies(entries, environment)) {
        String name = p.name();
        RootBeanDefinition bd = new RootBeanDefinition();
        bd.setTargetType(RateLimiter.class);
        bd.setFactoryBeanName("sluiceRateLimiters");
        bd.setFactoryMethodName("limiter");
        bd.getConstructorArgumentValues().addIndexedArgumentValue(0, name);
        bd.addQualifier(new AutowireCandidateQualifier(Qualifier.class, name));
        bd.setDefaultCandidate(false);
        registry.registerBeanDefinition("sluiceLimiter." + name, bd);
      }
    }

    @Override public void postProcessBeanFactory(ConfigurableListableBeanFactory beanFactory) {}
  }
}
