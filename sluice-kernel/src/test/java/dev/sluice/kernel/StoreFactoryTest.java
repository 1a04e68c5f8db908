package dev.sluice.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Refund;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * Each of the kernel's stores, opened by name over the real servers (Redis on 127.0.0.1:6379,
 * PostgreSQL on 127.0.0.1:5432), decides, refunds with its one issuer and answers its probe; a store
 * where nothing listens opens anyway and says so in its probe and its decisions.
 */
class StoreFactoryTest {
  static final String REDIS = System.getenv().getOrDefault("SLUICE_REDIS_URL", "redis://127.0.0.1:6379");
  static final String POSTGRES = System.getenv().getOrDefault("SLUICE_POSTGRES_URL", "jdbc:postgresql://127.0.0.1:5432/test?user=postgres");
  static final String NOWHERE_REDIS = "redis://127.0.0.1:18198";
  static final String NOWHERE_POSTGRES = "jdbc:postgresql://127.0.0.1:18198/test?user=postgres&connectTimeout=1";

  private final Policy policy = Policy.fixedWindow("kernel-" + UUID.randomUUID(), 2, Duration.ofMinutes(1));
  private final StoreOptions options = StoreOptions.defaults().withTimeout(Duration.ofSeconds(2))
      .withTable("sluice_kernel_test", Duration.ofMinutes(1));

  /** Two allowed, the third refused; a refund of the second lets one more in. */
  private static void decides(Store store, Policy policy) {
    store.check(List.of(policy));
    RateLimiter l = store.limiter(policy, RateLimitListener.NONE);
    String key = "k-" + UUID.randomUUID();
    assertThat(l.tryAcquire(key).allowed()).isTrue();
    Decision second = l.tryAcquire(key);
    assertThat(second.allowed()).isTrue();
    assertThat(second.path()).isEqualTo(Path.PRIMARY);
    assertThat(l.tryAcquire(key).allowed()).isFalse();
    assertThat(l.refund(second.ticket().orElseThrow())).isEqualTo(Refund.APPLIED);
    assertThat(l.tryAcquire(key).allowed()).isTrue();
    assertThat(store.probe()).isNull();
    assertThat(Readiness.peek(l, "probe").ready()).isTrue();
  }

  @Test void memory() {
    try (Store s = StoreFactory.named("memory").open(options.withMemory(10, 64, dev.sluice.Ticker.system()))) {
      assertThat(s.name()).isEqualTo("memory");
      assertThat(s.shared()).isFalse();
      assertThat(s.describe()).contains("at most 10 keys per policy", "at most 64 characters");
      decides(s, policy);
    }
  }

  @Test void redis() {
    try (Store s = StoreFactory.named("redis").open(options.withUrl(REDIS))) {
      assertThat(s.name()).isEqualTo("redis");
      assertThat(s.shared()).isTrue();
      decides(s, policy);
    }
  }

  @Test void postgres() {
    try (Store s = StoreFactory.named("postgres").open(options.withUrl(POSTGRES))) {
      assertThat(s.name()).isEqualTo("postgres");
      assertThat(s.describe()).contains("table sluice_kernel_test").doesNotContain("password");
      decides(s, policy);
      assertThatThrownBy(() -> s.check(List.of(Policy.slidingLog("log", 3, Duration.ofSeconds(1)))))
          .isInstanceOf(IllegalArgumentException.class);
    }
  }

  @Test void aStoreWhereNothingListensOpensAndSaysSo() {
    StoreOptions down = options.withTimeout(Duration.ofMillis(300)).withFailureModes(p -> FailureMode.closed());
    for (Store s : List.of(StoreFactory.named("redis").open(down.withUrl(NOWHERE_REDIS)),
        StoreFactory.named("postgres").open(down.withUrl(NOWHERE_POSTGRES)))) {
      try (s) {
        assertThat(s.probe()).as(s.name()).isIn("store_unavailable", "timeout");
        RateLimiter l = s.limiter(policy, RateLimitListener.NONE);
        Decision d = l.tryAcquire("k");
        assertThat(d.allowed()).isFalse();
        assertThat(d.reason().isFailure()).isTrue();
        Readiness.Status health = Readiness.peek(l, "probe");
        assertThat(health.ready()).isFalse();
        assertThat(health.path()).isEqualTo("failure_mode");
        assertThat(health.reason()).isIn(DecisionWords.of(Reason.STORE_UNAVAILABLE), DecisionWords.of(Reason.TIMEOUT));
      }
    }
  }

  @Test void wrongUrlsAndNamesAreRefusedSayingWhatWasWrong() {
    assertThatThrownBy(() -> StoreFactory.named("cassandra")).hasMessage("store 'cassandra' is unknown; the stores are memory, redis, postgres");
    assertThatThrownBy(() -> StoreFactory.named("redis").open(options.withUrl("http://u:secret@x")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("http://u:***@x is not a Redis URL");
    assertThatThrownBy(() -> StoreFactory.named("postgres").open(options.withUrl("mysql://u:secret@x")))
        .hasMessageStartingWith("mysql://u:***@x is not a PostgreSQL JDBC URL");
    assertThatThrownBy(() -> PostgresStore.checkTable("bad name;")).isInstanceOf(IllegalArgumentException.class);
    assertThat(Store.redact("jdbc:postgresql://h/db?user=u&password=p")).isEqualTo("jdbc:postgresql://h/db?user=u&password=***");
  }
}
