package dev.sluice.spring;

import dev.sluice.kernel.RedisTransportStore;
import dev.sluice.kernel.Store;
import dev.sluice.redis.jedis.JedisTransport;
import dev.sluice.redis.redisson.RedissonTransport;
import org.redisson.api.RedissonClient;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.RedisConnectionFailureException;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.jedis.JedisConnectionFactory;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;

/**
 * {@code sluice.store=redis} on the Redis client the application already has when it is not Lettuce:
 * a {@link RedissonClient} bean (through sluice-redis-redisson), else Spring Data Redis's
 * {@link JedisConnectionFactory} (through sluice-redis-jedis), each with no client of Sluice's own.
 * Runs before {@link SluiceAutoConfiguration}, whose Redis store (the application's Lettuce factory,
 * else {@code sluice.redis.url}) is built only when no store is defined here. Each part is switched on
 * by its module's presence on the class path.
 *
 * <p>A Redisson bean comes first because an application only has one when it chose Redisson, while
 * Spring Boot makes a Lettuce factory whenever {@code spring-boot-starter-data-redis} is there (and
 * Redisson's own starter replaces the factory with Redisson's).
 */
@AutoConfiguration(before = SluiceAutoConfiguration.class, afterName = {
    // Spring Boot 3.5's, Boot 4's, then Redisson's starters (a name not on the class path is ignored).
    "org.springframework.boot.autoconfigure.data.redis.RedisAutoConfiguration",
    "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration",
    "org.redisson.spring.starter.RedissonAutoConfiguration",
    "org.redisson.spring.starter.RedissonAutoConfigurationV2"})
@ConditionalOnProperty(prefix = "sluice", name = "store", havingValue = "redis")
class SluiceRedisClientsAutoConfiguration {
  /** The application's {@link RedissonClient}: its connections and threads, Sluice's scripts. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = {"dev.sluice.redis.redisson.RedissonTransport", "org.redisson.api.RedissonClient"})
  @ConditionalOnProperty(prefix = "sluice", name = "store", havingValue = "redis")
  static class OnRedisson {
    @Bean
    @ConditionalOnMissingBean(Store.class)
    @ConditionalOnSingleCandidate(RedissonClient.class)
    Store sluiceRedissonStore(RedissonClient redisson, SluiceProperties props) {
      RedissonTransport transport = RedissonTransport.of(redisson);
      // Closing the store closes its limiters and the transport (nothing of its own): the client stays the application's.
      return new RedisTransportStore("redis-redisson", "the application's RedissonClient", transport, transport::close,
          props.failureModes(), props.getTimeout());
    }
  }

  /**
   * Spring Data Redis's {@link JedisConnectionFactory}: a Cluster factory's {@code JedisCluster} (a
   * {@link UnifiedJedis}) as it is; a standalone or Sentinel factory's pool through a connection
   * borrowed per command, returned when answered (the factory exposes the pool no other way).
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = {"dev.sluice.redis.jedis.JedisTransport",
      "org.springframework.data.redis.connection.jedis.JedisConnectionFactory"})
  @ConditionalOnProperty(prefix = "sluice", name = "store", havingValue = "redis")
  static class OnJedis {
    @Bean
    @ConditionalOnMissingBean(value = Store.class, type = "org.redisson.api.RedissonClient")
    @ConditionalOnSingleCandidate(JedisConnectionFactory.class)
    Store sluiceJedisStore(JedisConnectionFactory factory, SluiceProperties props) {
      if (!factory.isRunning()) {
        factory.start();
      }
      JedisTransport transport;
      String where;
      if (factory.isRedisClusterAware()) {
        transport = JedisTransport.of((UnifiedJedis) factory.getClusterConnection().getNativeConnection());
        where = "the application's Jedis Cluster";
      } else {
        int poolSize = factory.getUsePool() && factory.getPoolConfig() != null ? factory.getPoolConfig().getMaxTotal() : -1;
        int lanes = poolSize > 0 ? Math.min(poolSize, JedisTransport.DEFAULT_THREADS) : JedisTransport.DEFAULT_THREADS;
        transport = JedisTransport.borrowing(() -> borrow(factory), lanes);
        RedisStandaloneConfiguration c = factory.getStandaloneConfiguration();
        where = factory.isRedisSentinelAware() ? "the application's Jedis Sentinel pool"
            : "redis://" + c.getHostName() + ":" + c.getPort() + "/" + c.getDatabase();
      }
      JedisTransport t = transport;
      return new RedisTransportStore("redis-jedis", where, t, t::close, props.failureModes(), props.getTimeout());
    }

    /** A pooled {@link Jedis} of the factory's; Spring's wrapping of a failed borrow undone, so that the transport reads Jedis' own error. */
    private static Jedis borrow(JedisConnectionFactory factory) {
      try {
        return (Jedis) factory.getConnection().getNativeConnection();
      } catch (RedisConnectionFailureException e) {
        if (e.getCause() instanceof JedisException j) {
          throw j;
        }
        throw e;
      }
    }
  }
}
