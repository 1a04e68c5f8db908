package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.RateLimiter;
import dev.sluice.guard.RateLimitExceededException;
import dev.sluice.redis.SharedRedis;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import reactor.core.publisher.Flux;

/**
 * Issue 32, item 6 (Resilience4j's features): {@code @RateLimited(timeout = ...)} waits for its
 * permit through the core's {@code WaitingLimiter}, blocking and on a {@code Mono}; methods returning
 * a {@code CompletionStage} or a {@code Flux} are decided asynchronously, when asked for, and answer
 * a refusal with their fallback or as their error; on a real port, Spring MVC and WebFlux, memory and
 * the shared Redis.
 */
class RateLimitedAsyncTest {
  @Test void springMvc() throws Exception {
    try (ConfigurableApplicationContext app = Apps.start()) {
      run(app);
    }
  }

  @Test void webFlux() throws Exception {
    try (ConfigurableApplicationContext app = Apps.start("spring.main.web-application-type=reactive")) {
      run(app);
    }
  }

  @Test void springMvcOnRedis() throws Exception {
    SharedRedis.client();
    try (ConfigurableApplicationContext app = Apps.start(RedisStoreTest.redis())) {
      run(app);
    }
  }

  @Test void webFluxOnRedis() throws Exception {
    SharedRedis.client();
    String[] redis = RedisStoreTest.redis();
    String[] props = java.util.Arrays.copyOf(redis, redis.length + 1);
    props[redis.length] = "spring.main.web-application-type=reactive";
    try (ConfigurableApplicationContext app = Apps.start(props)) {
      run(app);
    }
  }

  static void run(ConfigurableApplicationContext app) throws Exception {
    TestApp.Greeter g = app.getBean(TestApp.Greeter.class);
    RateLimiter perUser = app.getBean(RateLimiterRegistry.class).limiter("per-user");
    Client c = Apps.client(app);
    c.warmUp("/open");

    // Waiting: three calls under one call per 200 ms all pass; the limiter made the later ones wait.
    String id = UUID.randomUUID().toString();
    long start = System.nanoTime();
    for (int i = 0; i < 3; i++) {
      assertThat(g.patient(id)).isEqualTo("patient " + id);
    }
    assertThat(System.nanoTime() - start).as("two waits of 200 ms").isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(350));
    // Too short a timeout: refused at once, as without one.
    String id2 = UUID.randomUUID().toString();
    assertThat(g.impatient(id2)).isEqualTo("impatient " + id2);
    assertThatThrownBy(() -> g.impatient(id2)).isInstanceOf(RateLimitExceededException.class);
    // A Mono waits on no thread: the retry is scheduled.
    String id3 = UUID.randomUUID().toString();
    for (int i = 0; i < 3; i++) {
      assertThat(g.patientLater(id3).block(java.time.Duration.ofSeconds(30))).isEqualTo("patient later " + id3);
    }

    // CompletionStage: two calls, then the refusal as the stage's failure; over HTTP a 429.
    String s = UUID.randomUUID().toString();
    assertThat(c.get("/stage/" + s).body()).isEqualTo("hello stage " + s);
    assertThat(g.greetStage(s).get(30, TimeUnit.SECONDS)).isEqualTo("hello stage " + s);
    assertThatThrownBy(() -> g.greetStage(s).get(30, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
        .hasCauseInstanceOf(RateLimitExceededException.class);
    assertThat(c.get("/stage/" + s).statusCode()).isEqualTo(429);
    for (int i = 0; i < 2; i++) {
      assertThat(g.greetStageOrBusy(s).toCompletableFuture().get(30, TimeUnit.SECONDS)).isEqualTo("hello stage " + s);
    }
    assertThat(g.greetStageOrBusy(s).toCompletableFuture().get(30, TimeUnit.SECONDS)).isEqualTo("busy stage " + s);

    // Flux: nothing is charged until it is subscribed; then once for the whole stream.
    String f = UUID.randomUUID().toString();
    Flux<String> unsubscribed = g.greetMany(f);
    assertThat(perUser.peek("value:flux:" + f).remaining()).isEqualTo(2);
    assertThat(unsubscribed.collectList().block(java.time.Duration.ofSeconds(30))).isEqualTo(List.of("hello", f));
    assertThat(perUser.peek("value:flux:" + f).remaining()).isEqualTo(1);
    assertThat(c.get("/flux/" + f).statusCode()).isEqualTo(200);
    assertThatThrownBy(() -> g.greetMany(f).blockLast(java.time.Duration.ofSeconds(30))).isInstanceOf(RateLimitExceededException.class);
    assertThat(c.get("/flux/" + f).statusCode()).isEqualTo(429);
  }
}
