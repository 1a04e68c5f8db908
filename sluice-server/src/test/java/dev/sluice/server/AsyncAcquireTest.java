package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Refund;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.kernel.Store;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Issue 17.10: acquires parked a Jetty thread per store call, so at 64 connections a slow store
 * meant timeouts. They run on the limiter's asynchronous path now: 200 decisions outstanding at
 * once hold no request thread (Jetty has 64), and past --max-pending a request is shed at once.
 */
class AsyncAcquireTest {
  /** A real memory-tier limiter whose asynchronous decisions complete only when the test opens the gate. */
  static final class GatedStore extends Store {
    final ConcurrentLinkedQueue<Runnable> held = new ConcurrentLinkedQueue<>();
    private final Store memory;

    GatedStore(Ticker ticker) {
      memory = Store.memory(10_000, ticker);
    }

    void open() {
      for (Runnable r; (r = held.poll()) != null; ) {
        r.run();
      }
    }

    @Override public String name() { return "gated"; }

    @Override public String describe() { return "a memory store whose async decisions wait for the test"; }

    @Override public boolean shared() { return false; }

    @Override public RateLimiter limiter(Policy policy, RateLimitListener listener) {
      RateLimiter real = memory.limiter(policy, listener);
      return new RateLimiter() {
        @Override public Policy policy() { return real.policy(); }

        @Override public Decision tryAcquire(String key, long permits, Policy p) { return real.tryAcquire(key, permits, p); }

        @Override public CompletionStage<Decision> tryAcquireAsync(String key, long permits, Policy p) {
          CompletableFuture<Decision> f = new CompletableFuture<>();
          held.add(() -> f.complete(real.tryAcquire(key, permits, p)));
          return f;
        }

        @Override public Decision peek(String key, Policy p) { return real.peek(key, p); }

        @Override public Refund refund(Ticket ticket) { return real.refund(ticket); }

        @Override public void reset(String key, Policy p) { real.reset(key, p); }
      };
    }
  }

  /** {@code n} acquires of one permit each under policy login, keys k0 to k(n-1), sent at once. */
  static List<Future<HttpResponse<String>>> acquires(ExecutorService clients, Http http, int n) {
    List<Future<HttpResponse<String>>> answers = new java.util.ArrayList<>();
    for (int i = 0; i < n; i++) {
      String body = "{\"policy\":\"login\",\"key\":\"k" + i + "\"}";
      answers.add(clients.submit(() -> http.post("/v1/acquire", body)));
    }
    return answers;
  }

  @Test void outstandingDecisionsHoldNoRequestThreadAndPastMaxPendingAreShedAtOnce() throws Exception {
    ManualTicker ticker = ManualTicker.at(ServerApiTest.T0);
    GatedStore store = new GatedStore(ticker);
    List<Policy> policies = PolicyFile.parse(ServerApiTest.POLICIES.replace("limit: 3", "limit: 1000"), "test");
    ExecutorService clients = Executors.newFixedThreadPool(200);
    try (SluiceServer server = new SluiceServer(policies, store, "127.0.0.1", 0, Duration.ofSeconds(5), ticker, 100,
        TicketKeys.random(), 200).start()) {
      Http http = new Http(server.uri());
      List<Future<HttpResponse<String>>> answers = acquires(clients, http, 200);
      // 200 decisions outstanding on a pool of 64 request threads: none of them is parked on one.
      ServerApiTest.awaitTrue(() -> store.held.size() == 200);
      assertThat(http.get("/healthz").statusCode()).as("threads are free to serve").isEqualTo(200);
      HttpResponse<String> shed = http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"one-too-many\"}");
      assertThat(shed.statusCode()).isEqualTo(503);
      assertThat(ServerApiTest.header(shed, "Retry-After")).isEqualTo("1");
      assertThat(shed.body()).isEqualTo("{\"error\":\"overloaded\",\"message\":\"more than 200 decisions are pending; retry after 1 second\"}");

      store.open();
      for (Future<HttpResponse<String>> f : answers) {
        HttpResponse<String> r = f.get(30, TimeUnit.SECONDS);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(ServerApiTest.json(r).has("ticket")).isTrue();
      }
      assertThat(http.get("/metrics").body()).contains("sluice_server_requests_seconds_count{endpoint=\"acquire\"} 200");
    } finally {
      clients.shutdownNow();
    }
  }

  /**
   * Finding 10 of issue 17: a decision completes on the store's I/O thread (Lettuce's event loop, one
   * per policy), and writing the answer there made that one thread the service's bottleneck. The
   * answer is written on Jetty's pool: the server's clock, read only for the answer, is never read
   * on the thread that completed the decisions.
   */
  @Test void answersAreWrittenOnRequestThreadsNotOnTheThreadThatCompletedTheDecision() throws Exception {
    ManualTicker storeTicker = ManualTicker.at(ServerApiTest.T0);
    GatedStore store = new GatedStore(storeTicker);
    java.util.Set<String> answeredOn = java.util.concurrent.ConcurrentHashMap.newKeySet();
    Ticker serverTicker = () -> {
      answeredOn.add(Thread.currentThread().getName());
      return storeTicker.nowMicros();
    };
    List<Policy> policies = PolicyFile.parse(ServerApiTest.POLICIES.replace("limit: 3", "limit: 1000"), "test");
    ExecutorService clients = Executors.newFixedThreadPool(20);
    try (SluiceServer server = new SluiceServer(policies, store, "127.0.0.1", 0, Duration.ofSeconds(5), serverTicker, 100,
        TicketKeys.random(), 200).start()) {
      Http http = new Http(server.uri());
      List<Future<HttpResponse<String>>> answers = acquires(clients, http, 20);
      ServerApiTest.awaitTrue(() -> store.held.size() == 20);
      answeredOn.clear();
      Thread io = new Thread(store::open, "store-io");
      io.start();
      io.join(30_000);
      for (Future<HttpResponse<String>> f : answers) {
        HttpResponse<String> r = f.get(30, TimeUnit.SECONDS);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(ServerApiTest.json(r).has("ticket")).isTrue();
      }
      assertThat(answeredOn).isNotEmpty().doesNotContain("store-io").allMatch(n -> n.startsWith("sluice-http"));
    } finally {
      clients.shutdownNow();
    }
  }
}
