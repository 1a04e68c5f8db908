package dev.sluice.spring.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.redis.SharedRedis;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The load figure: one gateway on the shared Redis, requests per second through the Sluice filter
 * (route /wide, one policy) against the gateway's own RedisRateLimiter (route /builtin), both with
 * limits no client reaches, 16 client threads each on a key of its own, in alternating 5-second
 * rounds after a warm-up, so both see the same machine; prints the figures and the load average. A
 * load run, not a unit test: only with -Dsluice.load=true.
 *
 * <pre>
 * ./mvnw -B -q -Djacoco.skip -pl sluice-spring-cloud-gateway -am verify -Dsurefire.failIfNoSpecifiedTests=false \
 *     -Dtest=GatewayLoadTest -Dsluice.load=true
 * </pre>
 */
@EnabledIfSystemProperty(named = "sluice.load", matches = "true")
class GatewayLoadTest {
  static final int THREADS = 16;
  static final long ROUND_NANOS = 5_000_000_000L;

  @Test void sluiceAgainstTheBuiltInRedisRateLimiter() throws Exception {
    SharedRedis.client();
    try (Downstream downstream = new Downstream();
         ConfigurableApplicationContext app = Gateways.start(downstream, new Class<?>[0], "sluice.store=redis",
             "sluice.redis.url=" + SharedRedis.URL, "spring.data.redis.url=" + SharedRedis.URL, "sluice.timeout=5s")) {
      String base = "http://127.0.0.1:" + Gateways.port(app);
      round(base, "/wide/l", 2_000_000_000L);
      round(base, "/builtin/l", 2_000_000_000L);
      double[] sluice = new double[3];
      double[] builtin = new double[3];
      for (int i = 0; i < 3; i++) {
        sluice[i] = round(base, "/wide/l", ROUND_NANOS);
        builtin[i] = round(base, "/builtin/l", ROUND_NANOS);
      }
      String load = Files.readString(Path.of("/proc/loadavg")).strip();
      // The ratio per round (Sluice / RedisRateLimiter, the two rounds side by side in time), the load average beside it.
      String line = String.format(Locale.ROOT, "gateway load (16 threads, shared Redis): Sluice filter %.0f %.0f %.0f req/s; "
          + "RedisRateLimiter %.0f %.0f %.0f req/s; ratio %.2f %.2f %.2f; loadavg %s", sluice[0], sluice[1], sluice[2],
          builtin[0], builtin[1], builtin[2], sluice[0] / builtin[0], sluice[1] / builtin[1], sluice[2] / builtin[2], load);
      System.out.println(line);
      assertThat(sluice[2]).isPositive();
    }
  }

  /** Requests per second through {@code path} for {@code nanos}; every answer must be a 200. */
  private static double round(String base, String path, long nanos) throws Exception {
    LongAdder ok = new LongAdder();
    AtomicBoolean stop = new AtomicBoolean();
    List<String> unexpected = new java.util.concurrent.CopyOnWriteArrayList<>();
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    try {
      List<Future<?>> fs = new ArrayList<>();
      long t0 = System.nanoTime();
      for (int t = 0; t < THREADS; t++) {
        String client = UUID.randomUUID().toString();
        fs.add(pool.submit(() -> {
          while (!stop.get()) {
            HttpResponse<String> r = Gateways.get(base, path, client);
            if (r.statusCode() == 200) {
              ok.increment();
            } else {
              unexpected.add(r.statusCode() + " " + r.body());
            }
          }
          return null;
        }));
      }
      while (System.nanoTime() - t0 < nanos) {
        Thread.sleep(50); // the round's clock, not a wait for a condition
      }
      stop.set(true);
      for (Future<?> f : fs) {
        f.get();
      }
      double seconds = (System.nanoTime() - t0) / 1e9;
      assertThat(unexpected).as(path).isEmpty();
      return ok.sum() / seconds;
    } finally {
      pool.shutdownNow();
    }
  }
}
