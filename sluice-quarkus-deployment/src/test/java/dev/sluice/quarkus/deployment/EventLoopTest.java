package dev.sluice.quarkus.deployment;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.quarkus.RateLimited;
import dev.sluice.redis.RedisServerProcess;
import io.quarkus.test.QuarkusUnitTest;
import io.smallrye.mutiny.Uni;
import io.vertx.ext.web.Router;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * No decision on a shared store ever blocks the Vert.x event loop: on a private redis-server this
 * test starts on its own port (7185) and freezes with SIGSTOP, with one event loop in the whole
 * application, a rate-limited route (an HTTP rule) and a route calling a {@code @RateLimited}
 * {@code Uni} method both wait on their decisions while another route on that same event loop is
 * answered, again and again; once the server is thawed both are served. Vert.x's blocked-thread
 * checker (at a 1 s limit) reports nothing meanwhile, and it does report a route that does block the
 * loop (the control: the checker is listening).
 */
class EventLoopTest {
  static final int PORT = 7185;
  static final String URL = "redis://127.0.0.1:" + PORT;
  /**
   * The server is started once, before the application: the class is loaded twice (by JUnit and by
   * the application's class loader, where the test runs), so it is kept in system properties as JDK
   * types only: the server as an {@link AutoCloseable}, its SIGSTOP and SIGCONT as {@link Callable}s.
   */
  static final String SERVER = "test.quarkus-eventloop-redis";

  static {
    if (!System.getProperties().containsKey(SERVER)) {
      try {
        RedisServerProcess redis = RedisServerProcess.start(PORT);
        System.getProperties().put(SERVER + ".freeze", (Callable<Object>) () -> { redis.freeze(); return null; });
        System.getProperties().put(SERVER + ".thaw", (Callable<Object>) () -> { redis.thaw(); return null; });
        System.getProperties().put(SERVER, redis);
      } catch (Exception e) {
        throw new IllegalStateException("the private redis-server on port " + PORT + " did not start", e);
      }
    }
  }

  @SuppressWarnings("unchecked")
  private static void signal(String what) throws Exception {
    ((Callable<Object>) System.getProperties().get(SERVER + "." + what)).call();
  }

  @RegisterExtension
  static final QuarkusUnitTest APP = new QuarkusUnitTest()
      .withApplicationRoot(jar -> jar.addClasses(Routes.class, Greeter.class))
      .overrideConfigKey("quarkus.http.test-port", "0")
      .overrideConfigKey("quarkus.vertx.event-loops-pool-size", "1")
      .overrideConfigKey("quarkus.vertx.max-event-loop-execute-time", "1s")
      .overrideConfigKey("sluice.store", "redis")
      .overrideConfigKey("sluice.redis.url", URL)
      .overrideConfigKey("sluice.timeout", "1m") // a frozen server is waited on, not failed, while the test looks
      .overrideConfigKey("sluice.policies[0].name", "slow")
      .overrideConfigKey("sluice.policies[0].algorithm", "sliding-window")
      .overrideConfigKey("sluice.policies[0].limit", "1000")
      .overrideConfigKey("sluice.policies[0].window", "1h")
      .overrideConfigKey("sluice.http.rules[0].patterns", "/slow")
      .overrideConfigKey("sluice.http.rules[0].policy", "slow");

  @AfterAll
  static void stopTheServer() throws Exception {
    System.getProperties().remove(SERVER + ".freeze");
    System.getProperties().remove(SERVER + ".thaw");
    if (System.getProperties().remove(SERVER) instanceof AutoCloseable server) {
      server.close(); // thaws it first if frozen, then SHUTDOWN NOSAVE
    }
  }

  @ApplicationScoped
  public static class Greeter {
    @RateLimited(policy = "slow", key = "uni")
    public Uni<String> later() {
      return Uni.createFrom().item(() -> Thread.currentThread().getName());
    }
  }

  /** Routes on the event loop itself (Vert.x handlers, no worker in between). */
  @ApplicationScoped
  public static class Routes {
    @Inject
    Greeter greeter;

    void routes(@Observes Router router) {
      router.get("/slow").handler(rc -> rc.response().end(Thread.currentThread().getName()));
      router.get("/uni").handler(rc -> greeter.later().subscribe()
          .with(v -> rc.response().end(Thread.currentThread().getName()), rc::fail));
      router.get("/fast").handler(rc -> rc.response().end(Thread.currentThread().getName()));
      router.get("/block").handler(rc -> { // the control: a handler that does hold the loop, for 3 s
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
        while (System.nanoTime() < end) {
          Thread.onSpinWait();
        }
        rc.response().end("blocked");
      });
    }
  }

  @ConfigProperty(name = "quarkus.http.test-port")
  int port;

  /** What Vert.x's blocked-thread checker logs. */
  static final class Warnings extends Handler {
    final List<String> seen = new CopyOnWriteArrayList<>();

    @Override public void publish(LogRecord r) {
      String m = String.valueOf(r.getMessage());
      if (r.getLoggerName() != null && r.getLoggerName().contains("BlockedThreadChecker") || m.contains("has been blocked")) {
        seen.add(m);
      }
    }

    @Override public void flush() {}

    @Override public void close() {}
  }

  @Test
  void aRouteWaitingOnAFrozenRedisNeverHoldsTheEventLoop() throws Exception {
    Warnings warnings = new Warnings();
    Logger root = Logger.getLogger("");
    root.addHandler(warnings);
    HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(30)).build();
    try {
      assertThat(get(client, "/slow").join().body()).startsWith("vert.x-eventloop-thread-"); // the store answers
      assertThat(get(client, "/uni").join().statusCode()).isEqualTo(200);
      String loop = get(client, "/fast").join().body();
      assertThat(loop).startsWith("vert.x-eventloop-thread-");

      signal("freeze");
      CompletableFuture<HttpResponse<String>> slow = get(client, "/slow");
      CompletableFuture<HttpResponse<String>> uni = get(client, "/uni");
      for (int i = 0; i < 20; i++) { // the one event loop answers, while both decisions wait on Redis
        HttpResponse<String> fast = get(client, "/fast").get(30, TimeUnit.SECONDS);
        assertThat(fast.statusCode()).isEqualTo(200);
        assertThat(fast.body()).isEqualTo(loop);
      }
      assertThat(slow).as("the rule's decision waits on the frozen store").isNotDone();
      assertThat(uni).as("the @RateLimited Uni's decision waits on the frozen store").isNotDone();
      // The checker looks every second at a 1 s limit: give it time to see a loop held since the freeze.
      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
      while (System.nanoTime() < until) {
        assertThat(get(client, "/fast").get(30, TimeUnit.SECONDS).body()).isEqualTo(loop);
      }
      assertThat(warnings.seen).as("the blocked-thread checker's reports").isEmpty();

      signal("thaw");
      HttpResponse<String> slowDone = slow.get(60, TimeUnit.SECONDS);
      HttpResponse<String> uniDone = uni.get(60, TimeUnit.SECONDS);
      assertThat(slowDone.statusCode()).isEqualTo(200);
      assertThat(slowDone.body()).isEqualTo(loop); // the request went on, back on its event loop
      assertThat(uniDone.statusCode()).isEqualTo(200);
      assertThat(warnings.seen).as("the blocked-thread checker's reports").isEmpty();

      // The control: a route that holds the loop for 3 s is reported, so the silence above means something.
      assertThat(get(client, "/block").get(60, TimeUnit.SECONDS).body()).isEqualTo("blocked");
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (warnings.seen.isEmpty()) {
        assertThat(System.nanoTime()).as("the checker never reported the blocking route").isLessThan(deadline);
        Thread.yield();
      }
      assertThat(warnings.seen.get(0)).contains(loop);
    } finally {
      root.removeHandler(warnings);
      signal("thaw");
    }
  }

  private CompletableFuture<HttpResponse<String>> get(HttpClient client, String path) {
    HttpRequest r = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).timeout(Duration.ofSeconds(90)).build();
    return client.sendAsync(r, HttpResponse.BodyHandlers.ofString());
  }
}
