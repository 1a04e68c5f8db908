package dev.sluice.hazelcast;

import static org.assertj.core.api.Assertions.assertThat;

import com.hazelcast.client.HazelcastClientOfflineException;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.core.OperationTimeoutException;
import com.hazelcast.spi.exception.TargetDisconnectedException;
import dev.sluice.Decision;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Ticket;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** How Hazelcast's failures become reasons, and what a shut-down client decides. */
class HazelcastFailureTest {
  @Test void hazelcastsTimeoutIsATimeoutAndOnlyCallsNeverSentAreNotReached() {
    Policy p = Policy.fixedWindow("f-" + UUID.randomUUID(), 5, Duration.ofSeconds(1));
    HazelcastBackend backend = new HazelcastBackend(SharedCluster.get().member(0).getMap("sluice"), Duration.ZERO, false,
        1_000_000, "test");
    assertThat(backend.classify(new OperationTimeoutException("late"))).isEqualTo(Reason.TIMEOUT);
    assertThat(backend.classify(new java.util.concurrent.TimeoutException())).isEqualTo(Reason.TIMEOUT);
    assertThat(backend.classify(new TargetDisconnectedException("gone"))).isEqualTo(Reason.STORE_UNAVAILABLE);
    assertThat(HazelcastBackend.certainlyNotSent(new HazelcastClientOfflineException())).isTrue();
    assertThat(HazelcastBackend.certainlyNotSent(new TargetDisconnectedException("gone"))).isFalse();
    assertThat(backend.compile(p).policy()).isEqualTo(p);
  }

  @Test void aShutDownClientDecidesUnderTheFailureModeAndItsRefundsFail() {
    Cluster c = SharedCluster.get();
    HazelcastInstance client = c.client();
    Policy p = Policy.fixedWindow("f-" + UUID.randomUUID(), 5, Duration.ofMinutes(1));
    try (HazelcastRateLimiter l = HazelcastRateLimiter.builder(p, client).timeout(Duration.ofSeconds(5)).build()) {
      Ticket t = l.tryAcquire("k").ticket().orElseThrow();
      client.shutdown();
      Decision d = l.tryAcquire("k");
      assertThat(d.allowed()).isFalse();
      assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
      assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
      assertThat(l.refund(t)).as("never sent: not applied, may be retried").isEqualTo(Refund.FAILED);
    }
  }
}
