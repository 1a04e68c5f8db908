package dev.sluice.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.google.protobuf.Any;
import com.google.rpc.RetryInfo;
import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.RateLimitListener;
import dev.sluice.Refund;
import dev.sluice.redis.RedisRateLimiter;
import dev.sluice.redis.RedisServerProcess;
import io.grpc.CallOptions;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import io.lettuce.core.RedisClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The interceptor over a Redis limiter on a private redis-server this test starts on its own port
 * (7160) and freezes with SIGSTOP: the async path, and a frozen store answered within the call's
 * deadline with the failure mode.
 */
class RedisInterceptorTest {
  private static final int PORT = 7160;
  private static final AtomicInteger NAMES = new AtomicInteger();
  private static RedisServerProcess redis;
  private static RedisClient client;
  private final List<RedisRateLimiter> limiters = new ArrayList<>();

  @BeforeAll static void startRedis() throws Exception {
    redis = RedisServerProcess.start(PORT);
    client = RedisClient.create(redis.uri());
  }

  @AfterAll static void stopRedis() throws Exception {
    if (client != null) {
      client.shutdown();
    }
    if (redis != null) {
      redis.close(); // thaws, then stops the server this test started (by its pid file's pid and its port)
    }
  }

  @AfterEach void thaw() throws Exception {
    redis.thaw();
    limiters.forEach(RedisRateLimiter::close);
  }

  private RedisRateLimiter limiter(long limit, Duration timeout, FailureMode mode) {
    return limiter(limit, timeout, mode, RateLimitListener.NONE);
  }

  private RedisRateLimiter limiter(long limit, Duration timeout, FailureMode mode, RateLimitListener listener) {
    RedisRateLimiter l = RedisRateLimiter.builder(Policy.fixedWindow("grpc" + NAMES.incrementAndGet(), limit, Duration.ofMinutes(1)), client)
        .timeout(timeout).failureMode(mode).listener(listener, false).build();
    limiters.add(l);
    return l;
  }

  @Test void limitsOnRedisAndStartsTheCallOnTheExecutorOnceDecided() throws Exception {
    ExecutorService resume = Executors.newSingleThreadExecutor(r -> new Thread(r, "resume"));
    RateLimiter api = limiter(2, Duration.ofSeconds(2), FailureMode.closed());
    try (Echo echo = new Echo(RateLimitInterceptor.builder().limit("test.Echo/*", api).executor(resume).build())) {
      assertThat(echo.say("a")).isEqualTo("hi a");
      assertThat(echo.count("n")).containsExactly("n1", "n2", "n3");
      assertThat(Echo.get(echo.headers.get(), "ratelimit")).startsWith("\"" + api.policy().name() + "\";r=0;t=");
      StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class, () -> echo.say("c"));
      assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
      Duration wait = retryDelay(refused);
      assertThat(wait).isPositive().isLessThanOrEqualTo(Duration.ofMinutes(1));
      // A decision still on the way when interceptCall checked resumes the call on the executor; one Redis had
      // already answered by then starts inline, on the server's executor. Neither ever starts on Lettuce's thread,
      // and the handlers run on one of those two threads, never on the store client's.
      assertThat(echo.startThreads).hasSize(2).extracting(Thread::getName)
          .allMatch(n -> n.equals("resume") || n.startsWith("grpc-default-executor"));
      assertThat(echo.handlerThreads).extracting(Thread::getName)
          .allMatch(n -> n.equals("resume") || n.startsWith("grpc-default-executor"));
    } finally {
      resume.shutdownNow();
    }
  }

  @Test void aFrozenStoreUnderTheClosedModeIsUnavailableWithinTheDeadline() throws Exception {
    RateLimiter api = limiter(5, Duration.ofMillis(300), FailureMode.closed(Duration.ofMillis(750)));
    try (Echo echo = new Echo(RateLimitInterceptor.builder().limit(api).build())) {
      assertThat(echo.say("warm")).isEqualTo("hi warm"); // connected
      redis.freeze();
      long start = System.nanoTime();
      StatusRuntimeException e = catchThrowableOfType(StatusRuntimeException.class,
          () -> ClientCalls.blockingUnaryCall(echo.capturing(), Echo.SAY, CallOptions.DEFAULT.withDeadlineAfter(5, TimeUnit.SECONDS), "x"));
      long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      assertThat(e.getStatus().getCode()).as("answered by the failure mode, not the deadline").isEqualTo(Status.Code.UNAVAILABLE);
      assertThat(tookMillis).isLessThan(5_000);
      assertThat(e.getStatus().getDescription()).contains("could not decide").contains("timeout");
      assertThat(retryDelay(e)).isEqualTo(Duration.ofMillis(750));
      assertThat(Echo.get(e.getTrailers(), "retry-after")).isEqualTo("1");
      assertThat(Echo.get(e.getTrailers(), "ratelimit")).as("an outage reports no limits").isNull();
      assertThat(echo.handlerThreads).hasSize(1);
    }
  }

  @Test void aFrozenStoreUnderTheOpenModeLetsTheCallProceedWithinTheDeadline() throws Exception {
    AtomicInteger alerts = new AtomicInteger();
    RateLimiter api = limiter(5, Duration.ofMillis(300), FailureMode.open((policy, reason, cause) -> alerts.incrementAndGet()));
    try (Echo echo = new Echo(RateLimitInterceptor.builder().limit(api).build())) {
      assertThat(echo.say("warm")).isEqualTo("hi warm");
      redis.freeze();
      assertThat(ClientCalls.blockingUnaryCall(echo.capturing(), Echo.SAY, CallOptions.DEFAULT.withDeadlineAfter(5, TimeUnit.SECONDS), "x"))
          .isEqualTo("hi x");
      assertThat(alerts.get()).isPositive();
      assertThat(Echo.get(echo.headers.get(), "ratelimit")).as("no store answered: no limits to report").isNull();
    }
  }

  /**
   * A direct-executor server: the interceptor runs on the connection's event loop. With the store
   * frozen, interceptCall returns before the decision, and the same event loop serves another call
   * while the first one waits; the first starts when the store answers, off the event loop.
   */
  @Test void theDecisionNeverParksTheTransportThread() throws Exception {
    AtomicReference<Thread> decidedOn = new AtomicReference<>();
    RateLimiter api = limiter(5, Duration.ofSeconds(30), FailureMode.closed(), new RateLimitListener() {
      @Override public void onDecision(Decision decision, String key) {
        decidedOn.set(Thread.currentThread()); // told on the thread that completed the decision
      }
    });
    RateLimitInterceptor limits = RateLimitInterceptor.builder().limit("test.Echo/Say", api).build();
    AtomicReference<Thread> interceptThread = new AtomicReference<>();
    AtomicBoolean decidedBeforeReturn = new AtomicBoolean(true);
    CountDownLatch returned = new CountDownLatch(1);
    ServerInterceptor probe = new ServerInterceptor() {
      @Override public <Q, R> io.grpc.ServerCall.Listener<Q> interceptCall(io.grpc.ServerCall<Q, R> call, io.grpc.Metadata headers,
                                                                           io.grpc.ServerCallHandler<Q, R> next) {
        io.grpc.ServerCall.Listener<Q> l = limits.interceptCall(call, headers, next);
        if (call.getMethodDescriptor().equals(Echo.SAY) && returned.getCount() > 0) {
          interceptThread.set(Thread.currentThread());
          decidedBeforeReturn.set(decidedOn.get() != null);
          returned.countDown();
        }
        return l;
      }
    };
    try (Echo echo = new Echo(probe, true)) {
      assertThat(echo.free("warm")).isEqualTo("free warm");
      redis.freeze();
      CompletableFuture<String> first = new CompletableFuture<>();
      ClientCalls.asyncUnaryCall(echo.channel.newCall(Echo.SAY, CallOptions.DEFAULT.withDeadlineAfter(20, TimeUnit.SECONDS)), "a",
          observer(first));
      assertThat(returned.await(10, TimeUnit.SECONDS)).as("interceptCall returned").isTrue();
      assertThat(decidedBeforeReturn.get()).as("interceptCall returned before the store answered").isFalse();

      assertThat(echo.free("meanwhile")).as("the event loop serves another call while the first waits").isEqualTo("free meanwhile");
      assertThat(first).as("the first call is still waiting for its decision").isNotDone();
      Thread eventLoop = interceptThread.get();
      assertThat(echo.handlerThreads.get(echo.handlerThreads.size() - 1)).isSameAs(eventLoop);

      redis.thaw();
      assertThat(first.get(10, TimeUnit.SECONDS)).isEqualTo("hi a");
      assertThat(decidedOn.get()).as("the store client's thread decided").isNotSameAs(eventLoop);
      assertThat(decidedOn.get().getName()).startsWith("lettuce-");
      // The call started on the interceptor's executor, never the store client's thread. Its messages come either
      // on the event loop (the server asked for a direct executor) or, when grpc-java's deframer delivers them
      // inside the start's request(), on the executor's thread: which one is a race, the store client's never.
      assertThat(echo.startThreads.get(echo.startThreads.size() - 1).getName()).startsWith("sluice-grpc-");
      Thread handler = echo.handlerThreads.get(echo.handlerThreads.size() - 1);
      assertThat(handler == eventLoop || handler.getName().startsWith("sluice-grpc-"))
          .as("the handler ran on %s", handler.getName()).isTrue();
    }
  }

  /**
   * The client gives up while the store is frozen: the call is cancelled before it starts. The cancel
   * waits in the delayed listener; once the store answers (allowed, charged), the call starts already
   * cancelled, its handler never runs, and the cancel reaches the refund rule: the permit goes back.
   */
  @Test void aCallCancelledWhileItsDecisionIsPendingGivesItsPermitBackWhenCancelledIsNamed() throws Exception {
    AtomicInteger decisions = new AtomicInteger();
    AtomicReference<Refund> refunded = new AtomicReference<>();
    RateLimiter api = limiter(1, Duration.ofSeconds(30), FailureMode.closed(), new RateLimitListener() {
      @Override public void onDecision(Decision decision, String key) {
        decisions.incrementAndGet();
      }

      @Override public void onRefund(Policy policy, Refund result) {
        refunded.set(result);
      }
    });
    try (Echo echo = new Echo(RateLimitInterceptor.builder().limit(api).refundOn(Status.Code.CANCELLED).build())) {
      assertThat(api.peek("ip:127.0.0.1").remaining()).isEqualTo(1); // connected
      redis.freeze();
      StatusRuntimeException gaveUp = catchThrowableOfType(StatusRuntimeException.class, () -> ClientCalls.blockingUnaryCall(
          echo.capturing(), Echo.SAY, CallOptions.DEFAULT.withDeadlineAfter(300, TimeUnit.MILLISECONDS), "a"));
      assertThat(gaveUp.getStatus().getCode()).isEqualTo(Status.Code.DEADLINE_EXCEEDED);
      assertThat(decisions.get()).as("the store has not answered yet").isZero();
      redis.thaw();
      RateLimitInterceptorTest.awaitTrue("the cancelled call's permit is refunded", () -> refunded.get() != null);
      assertThat(refunded.get()).isEqualTo(Refund.APPLIED);
      assertThat(decisions.get()).isEqualTo(1);
      assertThat(api.peek("ip:127.0.0.1").remaining()).isEqualTo(1);
      assertThat(echo.handlerThreads).as("the handler of a cancelled call never ran").isEmpty();
    }
  }

  private static StreamObserver<String> observer(CompletableFuture<String> into) {
    return new StreamObserver<>() {
      @Override public void onNext(String value) {
        into.complete(value);
      }

      @Override public void onError(Throwable t) {
        into.completeExceptionally(t);
      }

      @Override public void onCompleted() {
        into.complete(null);
      }
    };
  }

  private static Duration retryDelay(StatusRuntimeException e) throws Exception {
    for (Any any : StatusProto.fromThrowable(e).getDetailsList()) {
      if (any.is(RetryInfo.class)) {
        com.google.protobuf.Duration d = any.unpack(RetryInfo.class).getRetryDelay();
        return Duration.ofSeconds(d.getSeconds(), d.getNanos());
      }
    }
    throw new AssertionError("no RetryInfo");
  }
}
