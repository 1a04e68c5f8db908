package dev.sluice.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** {@link RedisClientsBenchmark}'s state on each client sets up, decides through both libraries, and tears down. */
class RedisClientsBenchmarkTest {
  @ParameterizedTest
  @ValueSource(strings = {"lettuce", "jedis", "redisson"})
  void everyClientsStateSetsUpAndBothLibrariesDecide(String client) {
    BenchmarkStatesTest.requireServer(RedisFixture.reachable(), "Redis at " + RedisFixture.URL);
    RedisClientsBenchmark b = new RedisClientsBenchmark();
    b.client = client;
    b.keys = 10;
    b.setUp();
    try {
      for (int i = 0; i < 20; i++) {
        assertThat(b.sluice()).isTrue();
        assertThat(b.bucket4j()).isTrue();
      }
    } finally {
      b.tearDown();
    }
  }
}
