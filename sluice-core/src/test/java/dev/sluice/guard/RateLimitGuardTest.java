package dev.sluice.guard;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.memory.MemoryRateLimiter;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class RateLimitGuardTest {
  private final ManualTicker ticker = ManualTicker.at(1_700_000_000_000_000L);
  private final Policy login = Policy.fixedWindow("login", 2, Duration.ofSeconds(90));

  @Test void allowReturnsAndRefusalThrowsWithRetryAfter() throws Exception {
    RateLimitGuard guard = RateLimitGuard.builder(MemoryRateLimiter.builder(login).ticker(ticker).build()).build();
    assertThat(guard.check("account:1").remaining()).isEqualTo(1);
    assertThat(guard.call("account:1", () -> "done")).isEqualTo("done");
    ticker.advance(Duration.ofMillis(30_400));
    List<String> ran = new ArrayList<>();
    assertThatThrownBy(() -> guard.run("account:1", () -> ran.add("ran")))
        .isInstanceOfSatisfying(RateLimitExceededException.class, e -> {
          assertThat(e.policyName()).isEqualTo("login");
          assertThat(e.reason()).isEqualTo(Reason.LIMIT_EXCEEDED);
          assertThat(e.retryAfter()).isEqualTo(Duration.ofMillis(59_600));
          assertThat(e.retryAfterSeconds()).isEqualTo(60);
          assertThat(e.getMessage()).isEqualTo("rate limit of policy 'login' exceeded (LIMIT_EXCEEDED); retry after 60 s");
          assertThat(e.getStackTrace()).isEmpty();
        });
    assertThat(ran).isEmpty();
    assertThat(guard.get("account:2", () -> 42)).isEqualTo(42);
  }

  /** The MCP and guard contract: with nothing configured, a store failure lets the call through. */
  @Test void failingOpenIsTheDefault() {
    RateLimitGuard guard = RateLimitGuard.builder(new UnreachableStore(login, FailureMode.closed())).build();
    for (int i = 0; i < 3; i++) {
      Decision d = guard.check("account:1");
      assertThat(d.allowed()).isTrue();
      assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
      assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
      assertThat(d.ticket()).isEmpty();
    }
  }

  @Test void aStoreFailureIsDecidedByTheGuardsOpenModeAndItsAlertIsTold() {
    List<Reason> alerts = new ArrayList<>();
    RateLimiter down = new UnreachableStore(login, FailureMode.closed());
    RateLimitGuard guard = RateLimitGuard.builder(down).failureMode(FailureMode.open((policy, reason, cause) -> alerts.add(reason))).build();
    for (int i = 0; i < 5; i++) {
      assertThat(guard.check("account:1").allowed()).isTrue();
    }
    assertThat(alerts).hasSize(5).containsOnly(Reason.STORE_UNAVAILABLE);
  }

  @Test void aLimiterThatThrowsFailsOpenAndAThrowingAlertIsIgnored() {
    RateLimiter broken = new UnreachableStore(login, FailureMode.closed()) {
      @Override public Decision tryAcquire(String key, long permits, Policy p) {
        throw new IllegalStateException("connection pool exhausted");
      }
    };
    List<Throwable> causes = new ArrayList<>();
    RateLimitGuard guard = RateLimitGuard.builder(broken).failureMode(FailureMode.open((policy, reason, cause) -> {
      causes.add(cause);
      throw new RuntimeException("alert failed");
    })).build();
    Decision d = guard.check("account:1");
    assertThat(d.allowed()).isTrue();
    assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
    assertThat(causes).singleElement().satisfies(c -> assertThat(c).hasMessage("connection pool exhausted"));
  }

  @Test void aClosedGuardRefusesAStoreFailureWithItsOwnWait() {
    RateLimitGuard guard = RateLimitGuard.builder(new UnreachableStore(login, FailureMode.closed()))
        .failureMode(FailureMode.closed(Duration.ofMillis(300))).build();
    assertThatThrownBy(() -> guard.check("account:1")).isInstanceOfSatisfying(RateLimitExceededException.class, e -> {
      assertThat(e.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
      assertThat(e.retryAfter()).isEqualTo(Duration.ofMillis(300));
      assertThat(e.decision().path()).isEqualTo(Path.FAILURE_MODE);
    });
  }

  @Test void theGuardsModeDecidesWhateverTheLimitersOwnModeAnswered() {
    List<Reason> limiterAlerts = new ArrayList<>();
    RateLimiter openLimiter = new UnreachableStore(login, FailureMode.open((policy, reason, cause) -> limiterAlerts.add(reason)));
    RateLimitGuard closed = RateLimitGuard.builder(openLimiter).failureMode(FailureMode.closed()).build();
    assertThatThrownBy(() -> closed.check("account:1")).isInstanceOfSatisfying(RateLimitExceededException.class,
        e -> assertThat(e.reason()).isEqualTo(Reason.STORE_UNAVAILABLE));
    assertThat(limiterAlerts).as("the limiter's own mode answered first").hasSize(1);
  }

  @Test void aFallbackGuardDecidesWithItsLocalLimiter() {
    MemoryRateLimiter local = MemoryRateLimiter.builder(login).ticker(ticker).build();
    RateLimitGuard guard = RateLimitGuard.builder(new UnreachableStore(login, FailureMode.closed()))
        .failureMode(FailureMode.fallback(local)).build();
    for (int i = 0; i < 2; i++) {
      Decision d = guard.check("account:1");
      assertThat(d.allowed()).isTrue();
      assertThat(d.path()).isEqualTo(Path.FALLBACK);
    }
    assertThatThrownBy(() -> guard.check("account:1")).isInstanceOfSatisfying(RateLimitExceededException.class, e -> {
      assertThat(e.reason()).isEqualTo(Reason.LIMIT_EXCEEDED);
      assertThat(e.decision().path()).isEqualTo(Path.FALLBACK);
    });
  }

  @Test void corruptStateFailsClosedEvenInAGuard() {
    RateLimiter corrupt = new UnreachableStore(login, FailureMode.closed()) {
      @Override public Decision tryAcquire(String key, long permits, Policy p) {
        return FailureMode.closed().decide(p, key, permits, Reason.CORRUPT_STATE, null, 1);
      }
    };
    RateLimitGuard guard = RateLimitGuard.builder(corrupt).build();
    assertThatThrownBy(() -> guard.check("account:1")).isInstanceOf(RateLimitExceededException.class)
        .hasMessageContaining("CORRUPT_STATE");
  }

  @Test void contentionIsRefusedNotWavedThrough() {
    RateLimiter contended = new UnreachableStore(login, FailureMode.closed()) {
      @Override public Decision tryAcquire(String key, long permits, Policy p) {
        return FailureMode.closed().decide(p, key, permits, Reason.CONTENTION, null, 1);
      }
    };
    List<Reason> alerts = new ArrayList<>();
    RateLimitGuard guard = RateLimitGuard.builder(contended).failureMode(FailureMode.open((policy, reason, cause) -> alerts.add(reason))).build();
    assertThatThrownBy(() -> guard.check("account:1")).isInstanceOfSatisfying(RateLimitExceededException.class,
        e -> assertThat(e.reason()).isEqualTo(Reason.CONTENTION));
    assertThat(alerts).isEmpty();
  }

  @Test void badKeysStillThrowIllegalArgument() {
    RateLimitGuard guard = RateLimitGuard.builder(MemoryRateLimiter.builder(login).ticker(ticker).build()).build();
    assertThatThrownBy(() -> guard.check(" ")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("is blank");
  }

  /** A store that is down: a real TCP connect to a port nothing listens on, decided by the failure mode. */
  static class UnreachableStore implements RateLimiter {
    private final Policy policy;
    private final FailureMode mode;
    private final int port;

    UnreachableStore(Policy policy, FailureMode mode) {
      this.policy = policy;
      this.mode = mode;
      try (ServerSocket s = new ServerSocket(0)) {
        this.port = s.getLocalPort();
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
    }

    @Override public Policy policy() { return policy; }

    @Override public Decision tryAcquire(String key, long permits, Policy p) {
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", port), 500);
        throw new IllegalStateException("something listens on " + port);
      } catch (IOException e) {
        return mode.decide(p, key, permits, Reason.STORE_UNAVAILABLE, e, Ticker.system().nowMicros());
      }
    }

    @Override public Decision peek(String key, Policy p) { return tryAcquire(key, 1, p); }

    @Override public Refund refund(Ticket ticket) { return Refund.FAILED; }

    @Override public void reset(String key, Policy p) {}
  }
}
