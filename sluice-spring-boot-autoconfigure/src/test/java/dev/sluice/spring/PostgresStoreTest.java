package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.jdbc.JdbcRateLimiter;
import dev.sluice.jdbc.PostgresTestSupport;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Spring MVC on the shared PostgreSQL ({@code SLUICE_POSTGRES_URL}) through the application's
 * DataSource, the table created at start-up ({@code sluice.jdbc.apply-schema}): 16 threads admitted
 * exactly, the annotation, the endpoint and the store's health.
 */
class PostgresStoreTest {
  @Test void theApplicationsDataSourceKeepsTheBudgets() throws Exception {
    PostgresTestSupport.requireServer();
    String table = PostgresTestSupport.tableName();
    String id = UUID.randomUUID().toString();
    try (ConfigurableApplicationContext app = Apps.start("sluice.store=jdbc", "sluice.timeout=2s",
        "sluice.jdbc.table=" + table, "sluice.jdbc.apply-schema=true", "spring.datasource.url=" + PostgresTestSupport.URL,
        "spring.autoconfigure.exclude=org.springframework.boot.autoconfigure.data.redis.RedisAutoConfiguration,"
            + "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration")) {
      assertThat(app.getBean(RateLimiterRegistry.class).limiter("bulk")).isInstanceOf(JdbcRateLimiter.class);
      Client client = Apps.client(app);
      assertThat(Apps.admitted(200, 429, () -> "/bulk", id, client)).isEqualTo(100);
      assertThat(client.get("/greet/" + id).statusCode()).isEqualTo(200);
      assertThat(client.get("/greet/" + id).statusCode()).isEqualTo(200);
      assertThat(client.get("/greet/" + id).statusCode()).isEqualTo(429);
      assertThat(client.json("/actuator/ratelimits").get("store").asText()).isEqualTo("jdbc");
      JsonNode health = client.json("/actuator/health");
      assertThat(health.at("/components/sluice/status").asText()).isEqualTo("UP");
    } finally {
      PostgresTestSupport.drop(PostgresTestSupport.URL, table);
    }
  }
}
