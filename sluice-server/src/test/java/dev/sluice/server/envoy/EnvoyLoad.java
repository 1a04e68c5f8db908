package dev.sluice.server.envoy;

import com.google.common.util.concurrent.FutureCallback;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.MoreExecutors;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Arrays;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntConsumer;

/**
 * A short load run against one running {@code sluice serve}: {@code ShouldRateLimit} over gRPC and
 * {@code POST /v1/acquire} over HTTP/1.1, the same number of calls in flight, keys spread over 1,000
 * values, each for a warm-up and a measured interval (docs/server.md). Not a test: run by hand.
 *
 * <pre>java -cp TEST_CLASSPATH dev.sluice.server.envoy.EnvoyLoad GRPC_PORT HTTP_PORT SECONDS IN_FLIGHT DOMAIN KEY POLICY</pre>
 */
public final class EnvoyLoad {
  private EnvoyLoad() {}

  public static void main(String[] args) throws Exception {
    int grpcPort = Integer.parseInt(args[0]);
    int httpPort = Integer.parseInt(args[1]);
    int seconds = Integer.parseInt(args[2]);
    int inFlight = Integer.parseInt(args[3]);
    String domain = args[4];
    String key = args[5];
    String policy = args[6];
    try (EnvoyClient c = new EnvoyClient(grpcPort)) {
      RateLimitServiceGrpc.RateLimitServiceFutureStub stub = RateLimitServiceGrpc.newFutureStub(c.channel);
      Driver grpc = (i, done) -> Futures.addCallback(stub.shouldRateLimit(RateLimitRequest.newBuilder().setDomain(domain)
              .addDescriptors(RateLimitDescriptor.newBuilder().addEntries(RateLimitDescriptor.Entry.newBuilder().setKey(key)
                  .setValue("k" + i))).build()),
          new FutureCallback<RateLimitResponse>() {
            @Override public void onSuccess(RateLimitResponse r) { done.accept(r.getOverallCode() == RateLimitResponse.Code.OK ? 1 : 0); }

            @Override public void onFailure(Throwable t) { done.accept(-1); }
          }, MoreExecutors.directExecutor());
      HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      URI acquire = URI.create("http://127.0.0.1:" + httpPort + "/v1/acquire");
      Driver json = (i, done) -> http.sendAsync(HttpRequest.newBuilder(acquire).header("Content-Type", "application/json")
              .POST(HttpRequest.BodyPublishers.ofString("{\"policy\":\"" + policy + "\",\"key\":\"k" + i + "\"}")).build(),
          HttpResponse.BodyHandlers.ofString()).whenComplete((r, t) -> done.accept(t != null ? -1 : r.statusCode() == 200 ? 1 : 0));
      run("warm-up grpc", grpc, seconds, inFlight);
      run("warm-up json", json, seconds, inFlight);
      run("ShouldRateLimit (gRPC)", grpc, seconds, inFlight);
      run("POST /v1/acquire (JSON)", json, seconds, inFlight);
    }
  }

  @FunctionalInterface
  interface Driver {
    void call(int key, IntConsumer done);
  }

  static void run(String name, Driver d, int seconds, int inFlight) throws InterruptedException {
    Semaphore slots = new Semaphore(inFlight);
    AtomicLong ok = new AtomicLong();
    AtomicLong refused = new AtomicLong();
    AtomicLong errors = new AtomicLong();
    long[] latencies = new long[4_000_000];
    AtomicInteger recorded = new AtomicInteger();
    long end = System.nanoTime() + seconds * 1_000_000_000L;
    long t0 = System.nanoTime();
    while (System.nanoTime() < end) {
      slots.acquire();
      long start = System.nanoTime();
      d.call(ThreadLocalRandom.current().nextInt(1000), outcome -> {
        int at = recorded.getAndIncrement();
        if (at < latencies.length) {
          latencies[at] = System.nanoTime() - start;
        }
        (outcome == 1 ? ok : outcome == 0 ? refused : errors).incrementAndGet();
        slots.release();
      });
    }
    slots.acquire(inFlight);
    double elapsed = (System.nanoTime() - t0) / 1e9;
    int n = Math.min(recorded.get(), latencies.length);
    long[] l = Arrays.copyOf(latencies, n);
    Arrays.sort(l);
    long total = ok.get() + refused.get() + errors.get();
    System.out.printf("%-26s %8.0f calls/s  p50 %6.2f ms  p99 %6.2f ms  (%d allowed, %d refused, %d errors, %d in flight)%n",
        name, total / elapsed, l[n / 2] / 1e6, l[(int) (n * 0.99)] / 1e6, ok.get(), refused.get(), errors.get(), inFlight);
  }
}
