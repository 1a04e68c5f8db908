package dev.sluice.compose;

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
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class SharedStateTest {
  final ManualTicker ticker = ManualTicker.at(CompositionTest.T0);

  /** A shared store standing in for Redis: a real limiter that can be taken down, answer corrupt, or throw. */
  static final class Store implements RateLimiter {
    final MemoryRateLimiter d;
    final AtomicInteger calls = new AtomicInteger();
    volatile Reason failing;
    volatile boolean throwing;

    Store(MemoryRateLimiter d) {
      this.d = d;
    }

    @Override public Policy policy() { return d.policy(); }

    @Override public Decision tryAcquire(String key, long permits, Policy p) {
      calls.incrementAndGet();
      if (throwing) {
        throw new IllegalStateException("connection reset");
      }
      if (failing != null) {
        // What a shared-store limiter answers under its default failure mode.
        return FailureMode.closed().decide(p, key, permits, failing, null, d.ticker().nowMicros());
      }
      return d.tryAcquire(key, permits, p);
    }

    @Override public Decision peek(String key, Policy p) {
      if (throwing) {
        throw new IllegalStateException("connection reset");
      }
      return d.peek(key, p);
    }

    @Override public Refund refund(Ticket t) { return d.refund(t); }

    @Override public void reset(String key, Policy p) { d.reset(key, p); }
  }

  /** An asynchronous store: answers complete only when the test releases them, from another thread. */
  static class AsyncStore implements RateLimiter {
    final Store d;
    final ConcurrentLinkedQueue<Runnable> pending = new ConcurrentLinkedQueue<>();

    AsyncStore(Store d) {
      this.d = d;
    }

    @Override public Policy policy() { return d.policy(); }

    @Override public Decision tryAcquire(String key, long permits, Policy p) { throw new AssertionError("sync call on an async store"); }

    @Override public CompletionStage<Decision> tryAcquireAsync(String key, long permits, Policy p) {
      CompletableFuture<Decision> f = new CompletableFuture<>();
      pending.add(() -> f.complete(d.tryAcquire(key, permits, p)));
      return f;
    }

    @Override public Decision peek(String key, Policy p) { throw new AssertionError("sync call on an async store"); }

    @Override public Refund refund(Ticket t) { return d.refund(t); }

    @Override public void reset(String key, Policy p) { d.reset(key, p); }

    void answerAllFromAnotherThread() throws Exception {
      Thread t = new Thread(() -> {
        Runnable r;
        while ((r = pending.poll()) != null) {
          r.run();
        }
      });
      t.start();
      t.join(10_000);
    }
  }

  Store store(long limit) {
    return new Store(Legs.memory(Policy.fixedWindow("global", limit, Duration.ofMinutes(1)), ticker));
  }

  Legs.Clocked local(long limit) {
    return new Legs.Clocked(Legs.memory(Policy.fixedWindow("local", limit, Duration.ofMinutes(1)), ticker));
  }

  @Test
  void theSharedStoreDecidesFirstAndTheLocalLegsOnlyAfterItAdmits() {
    Store shared = store(2);
    var local = local(10);
    Composition c = Composition.builder().sharedState(SharedState.of(shared)).leg(local).build();

    Decision d1 = c.tryAcquire("acme");
    assertThat(d1.allowed()).isTrue();
    assertThat(d1.path()).isEqualTo(Path.PRIMARY);
    assertThat(d1.remaining()).as("the shared store is the most restrictive").isEqualTo(1);
    c.tryAcquire("acme");
    Decision refused = c.tryAcquire("acme");
    assertThat(refused.allowed()).isFalse();
    assertThat(refused.path()).isEqualTo(Path.PRIMARY);
    assertThat(refused.policy().name()).isEqualTo("global");
    assertThat(local.netCharged()).as("a shared refusal never reaches the local legs").isEqualTo(2);
    assertThat(local.acquires()).isEqualTo(2);
  }

  @Test
  void aLocalRefusalGivesTheSharedChargeBack() {
    Store shared = store(10);
    Composition c = Composition.builder().sharedState(SharedState.of(shared)).leg(local(1)).build();
    assertThat(c.tryAcquire("acme").allowed()).isTrue();
    assertThat(c.tryAcquire("acme").allowed()).isFalse();
    assertThat(c.tryAcquire("acme").allowed()).isFalse();
    assertThat(shared.peek("acme").remaining()).as("the shared budget counts only the admitted call").isEqualTo(9);
    assertThat(c.stats().compensations()).isEqualTo(2);
  }

  @Test
  void byDefaultTheLocalLegsDecideAloneAndSaySo() {
    Store shared = store(100);
    var local = local(2);
    Composition c = Composition.builder().sharedState(SharedState.of(shared)).leg(local).build();
    shared.failing = Reason.STORE_UNAVAILABLE;

    Decision d = c.tryAcquire("acme");
    assertThat(d.allowed()).isTrue();
    assertThat(d.path()).isEqualTo(Path.FALLBACK);
    assertThat(c.tryAcquire("acme").path()).isEqualTo(Path.FALLBACK);
    Decision third = c.tryAcquire("acme");
    assertThat(third.allowed()).as("available, but still limited: per process").isFalse();
    assertThat(third.path()).isEqualTo(Path.FALLBACK);
    assertThat(third.reason()).isEqualTo(Reason.LIMIT_EXCEEDED);

    shared.failing = null;
    shared.throwing = true;
    c.reset("acme");
    assertThat(c.tryAcquire("acme").path()).isEqualTo(Path.FALLBACK);
    assertThat(c.stats().sharedFailures()).isEqualTo(4);

    shared.throwing = false;
    Decision back = c.tryAcquire("acme");
    assertThat(back.path()).isEqualTo(Path.PRIMARY);
  }

  @Test
  void closedRefusesUntilTheStoreRecoversWithItsWait() {
    Store shared = store(100);
    var local = local(10);
    Composition c = Composition.builder().sharedState(SharedState.of(shared)).failureMode(FailureMode.closed(Duration.ofMillis(400)))
        .leg(local).build();
    shared.throwing = true;

    Decision d = c.tryAcquire("acme");
    assertThat(d.allowed()).isFalse();
    assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
    assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
    assertThat(d.retryAfter()).isEqualTo(Duration.ofMillis(400));
    assertThat(c.peek("acme").allowed()).isFalse();
    assertThat(local.acquires()).isZero();

    shared.throwing = false;
    shared.failing = Reason.TIMEOUT;
    Decision timedOut = c.tryAcquire("acme");
    assertThat(timedOut.reason()).isEqualTo(Reason.TIMEOUT);
    assertThat(timedOut.retryAfter()).as("the shared limiter's own failure-mode refusal keeps its wait").isEqualTo(Duration.ofSeconds(1));

    shared.failing = null;
    assertThat(c.tryAcquire("acme").allowed()).isTrue();
  }

  @Test
  void openTellsItsAlertAndTheLocalLegsDecide() {
    Store shared = store(100);
    var local = local(1);
    java.util.List<Reason> alerts = new java.util.ArrayList<>();
    Composition c = Composition.builder().sharedState(SharedState.of(shared))
        .failureMode(FailureMode.open((policy, reason, cause) -> alerts.add(reason))).leg(local).build();
    shared.failing = Reason.TIMEOUT;

    Decision d = c.tryAcquire("acme");
    assertThat(d.allowed()).isTrue();
    assertThat(d.path()).isEqualTo(Path.FALLBACK);
    assertThat(d.remaining()).as("the leg's, not the lifted shared limit's").isZero();
    Decision refused = c.tryAcquire("acme");
    assertThat(refused.allowed()).isFalse();
    assertThat(refused.reason()).isEqualTo(Reason.LIMIT_EXCEEDED);
    assertThat(refused.path()).isEqualTo(Path.FALLBACK);
    assertThat(alerts).containsExactly(Reason.TIMEOUT, Reason.TIMEOUT);
  }

  @Test
  void aFallbackStandsInForTheSharedStateAndItsTicketsRefundIntoIt() {
    Store shared = store(2);
    var local = local(10);
    MemoryRateLimiter standIn = Legs.memory(shared.policy(), ticker); // a memory tier of the shared policy
    Composition c = Composition.builder().sharedState(SharedState.of(shared)).failureMode(FailureMode.fallback(standIn))
        .leg(local).build();
    shared.throwing = true;

    Decision first = c.tryAcquire("acme");
    assertThat(first.allowed()).isTrue();
    assertThat(first.path()).isEqualTo(Path.FALLBACK);
    assertThat(first.remaining()).as("the stand-in is the most restrictive").isEqualTo(1);
    assertThat(c.tryAcquire("acme").allowed()).isTrue();
    Decision third = c.tryAcquire("acme");
    assertThat(third.allowed()).as("the stand-in's limit, per process").isFalse();
    assertThat(third.path()).isEqualTo(Path.FALLBACK);
    assertThat(third.policy().name()).isEqualTo("global");
    assertThat(local.acquires()).as("a stand-in's refusal never reaches the legs").isEqualTo(2);
    assertThat(c.peek("acme").allowed()).isFalse();

    assertThat(c.refund(first.ticket().orElseThrow())).isEqualTo(Refund.APPLIED);
    assertThat(standIn.peek("acme").remaining()).as("the composed ticket refunded the stand-in").isEqualTo(1);
    assertThat(local.netCharged()).isEqualTo(1);

    shared.throwing = false;
    c.reset("acme");
    assertThat(standIn.peek("acme").remaining()).as("a reset forgets the stand-in's count too").isEqualTo(2);
    assertThat(c.tryAcquire("acme").path()).isEqualTo(Path.PRIMARY);
  }

  @Test
  void aLegRefusalGivesTheFallbacksChargeBack() {
    Store shared = store(5);
    MemoryRateLimiter standIn = Legs.memory(shared.policy(), ticker);
    Composition c = Composition.builder().sharedState(SharedState.of(shared)).failureMode(FailureMode.fallback(standIn))
        .leg(local(1)).build();
    shared.failing = Reason.STORE_UNAVAILABLE;
    assertThat(c.tryAcquire("acme").allowed()).isTrue();
    assertThat(c.tryAcquire("acme").allowed()).isFalse();
    assertThat(standIn.peek("acme").remaining()).as("only the admitted call stays charged").isEqualTo(4);
  }

  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.EnumSource(value = Reason.class, names = {"CORRUPT_STATE", "INVALID_CLOCK", "CONTENTION"})
  void untrustworthyStateAndHotKeyContentionFailClosedEvenByDefault(Reason reason) {
    Store shared = store(100);
    var local = local(10);
    Composition c = Composition.builder().sharedState(SharedState.of(shared)).leg(local).build();
    shared.failing = reason;
    Decision d = c.tryAcquire("acme");
    assertThat(d.allowed()).isFalse();
    assertThat(d.reason()).isEqualTo(reason);
    assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
    assertThat(local.acquires()).isZero();
  }

  @Test
  void reservationsHoldPermitsOnEveryLegUntilReleased() {
    Store shared = store(3);
    var local = local(5);
    Composition c = Composition.builder().sharedState(SharedState.of(shared)).leg(local).build();

    Optional<Reservation> r = c.reserve("acme", 2);
    assertThat(r).isPresent();
    assertThat(shared.peek("acme").remaining()).isEqualTo(1);
    assertThat(local.netCharged()).isEqualTo(2);
    assertThat(c.reserve("acme", 2)).as("refused: only one permit left in the shared store").isEmpty();

    assertThat(c.release(r.get())).isEqualTo(Refund.APPLIED);
    assertThat(r.get().isReleased()).isTrue();
    assertThat(c.release(r.get())).as("released once").isEqualTo(Refund.NO_EFFECT);
    // Unlike a bare check-and-increment adapter, the shared budget gets the permits back too.
    assertThat(shared.peek("acme").remaining()).isEqualTo(3);
    assertThat(local.netCharged()).isZero();
  }

  @Test
  void synchronousCallsOnAnAsynchronousSharedStateThrowInsteadOfGuessing() {
    AsyncStore async = new AsyncStore(store(1));
    Composition c = Composition.builder().sharedState(SharedState.async(async)).leg(local(5)).build();

    assertThatThrownBy(() -> c.reserve("acme", 1))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("reserve() cannot answer synchronously: this composition's shared state is asynchronous, "
            + "and a synchronous answer would be a guess; use reserveAsync()");
    assertThatThrownBy(() -> c.tryAcquire("acme")).isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith("tryAcquire() cannot answer synchronously");
    assertThatThrownBy(() -> c.peek("acme")).isInstanceOf(IllegalStateException.class);
    assertThat(async.pending).as("nothing was sent to the store").isEmpty();
  }

  @Test
  void asyncReservationsWaitForTheStoreWithoutHoldingTheCaller() throws Exception {
    AsyncStore async = new AsyncStore(store(1));
    var local = local(5);
    Composition c = Composition.builder().sharedState(SharedState.async(async)).leg(local).build();

    CompletableFuture<Optional<Reservation>> first = c.reserveAsync("acme", 1).toCompletableFuture();
    CompletableFuture<Optional<Reservation>> second = c.reserveAsync("acme", 1).toCompletableFuture();
    assertThat(first).isNotDone();
    assertThat(second).isNotDone();
    assertThat(local.acquires()).as("the local legs wait for the store's answer").isZero();

    async.answerAllFromAnotherThread();

    assertThat(first.get(10, TimeUnit.SECONDS)).isPresent();
    assertThat(second.get(10, TimeUnit.SECONDS)).as("the store denied it: denied, not granted by a truthy promise").isEmpty();
    assertThat(local.netCharged()).isEqualTo(1);
    assertThat(c.release(first.get().get())).isEqualTo(Refund.APPLIED);
    assertThat(async.d.peek("acme").remaining()).isEqualTo(1);
    assertThat(local.netCharged()).isZero();
  }

  @Test
  void anAsyncStoreFailureDegradesToo() throws Exception {
    RateLimiter exploding = new AsyncStore(store(5)) {
      @Override public CompletionStage<Decision> tryAcquireAsync(String key, long permits, Policy p) {
        return CompletableFuture.failedFuture(new IllegalStateException("connection reset"));
      }
    };
    Composition c2 = Composition.builder().sharedState(SharedState.async(exploding)).leg(local(5)).build();
    Decision d = c2.tryAcquireAsync("acme", 1).toCompletableFuture().get(10, TimeUnit.SECONDS);
    assertThat(d.allowed()).isTrue();
    assertThat(d.path()).isEqualTo(Path.FALLBACK);
  }

  @Test
  void keyedCompositionSendsTheRealKeyToTheSharedStore() {
    Store shared = store(1);
    Composition c = Composition.builder().sharedState(SharedState.of(shared)).slots(4).ticker(ticker)
        .legFactory(s -> Legs.memory(Policy.fixedWindow("local", 10, Duration.ofMinutes(1)), ticker)).build();
    assertThat(c.tryAcquire("acme").allowed()).isTrue();
    assertThat(c.tryAcquire("globex").allowed()).as("its own shared budget, whatever slot it hashes to").isTrue();
    assertThat(c.tryAcquire("acme").allowed()).isFalse();
    assertThat(c.tryAcquire(null).allowed()).isTrue();
    assertThat(shared.peek("unknown").remaining()).as("a missing key reaches the store as the missing key").isZero();
  }

  @Test
  void aNearCachedSharedStoreIsHonouredNotMistakenForAnOutage() {
    Store shared = store(2);
    var local = local(100);
    NearCachedRateLimiter near = NearCachedRateLimiter.builder(shared).ticker(ticker).build();
    Composition c = Composition.builder().sharedState(SharedState.of(near)).leg(local).build();
    c.tryAcquire("acme");
    c.tryAcquire("acme");
    assertThat(c.tryAcquire("acme").path()).isEqualTo(Path.PRIMARY);
    for (int i = 0; i < 100; i++) {
      Decision d = c.tryAcquire("acme");
      assertThat(d.allowed()).isFalse();
      assertThat(d.path()).isEqualTo(Path.NEAR_CACHE);
    }
    assertThat(shared.calls.get()).as("round trips: two admitted, one refused, then the near-cache").isEqualTo(3);
    assertThat(c.stats().sharedFailures()).isZero();
    assertThat(local.netCharged()).isEqualTo(2);
  }
}
