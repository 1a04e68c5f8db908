package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The servlet filter's cost, measured: the same MVC endpoint ({@code GET /load}) on two Tomcat
 * applications in this JVM, one with the rule (memory store, every request charged) and one with
 * {@code sluice.http.enabled=false}, driven by 8 client threads in alternating 5-second rounds after
 * a warm-up, so all see the same machine. With the filter twice: every thread on one key (the
 * client's address: one hot key) and each thread on a key of its own ({@code X-Client}). A load run,
 * not a unit test: only with -Dsluice.load=true.
 *
 * <pre>
 * ./mvnw -B -q -pl sluice-spring-boot-autoconfigure -am verify -Dsurefire.failIfNoSpecifiedTests=false \
 *     -Dtest=MvcFilterOverheadLoadTest -Dsluice.load=true
 * </pre>
 */
@EnabledIfSystemProperty(named = "sluice.load", matches = "true")
class MvcFilterOverheadLoadTest {
  static final int THREADS = 8;
  static final Duration ROUND = Duration.ofSeconds(5);

  @Test void theFiltersCostOnAnMvcEndpoint() throws Exception {
    try (ConfigurableApplicationContext with = Apps.start("logging.level.root=error");
         ConfigurableApplicationContext without = Apps.start("logging.level.root=error", "sluice.http.enabled=false")) {
      HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      URI a = URI.create("http://127.0.0.1:" + Apps.client(with).port() + "/load");
      URI b = URI.create("http://127.0.0.1:" + Apps.client(without).port() + "/load");
      assertThat(http.send(HttpRequest.newBuilder(a).build(), HttpResponse.BodyHandlers.discarding()).headers()
          .firstValue("RateLimit-Policy")).isPresent();
      assertThat(http.send(HttpRequest.newBuilder(b).build(), HttpResponse.BodyHandlers.discarding()).headers()
          .firstValue("RateLimit-Policy")).isEmpty();
      String before = uptime();
      round(http, a, Duration.ofSeconds(3), false);
      round(http, b, Duration.ofSeconds(3), false);
      double[] hot = new double[3];
      double[] own = new double[3];
      double[] bare = new double[3];
      for (int i = 0; i < 3; i++) {
        hot[i] = round(http, a, ROUND, false);
        own[i] = round(http, a, ROUND, true);
        bare[i] = round(http, b, ROUND, false);
      }
      double h = median(hot);
      double k = median(own);
      double wo = median(bare);
      System.out.printf(Locale.ROOT, "%nMVC GET /load, %d client threads, median of 3 rounds of %ds, same JVM:%n"
          + "  with the filter, one hot key:        %.0f req/s (ratio %.3f)%n"
          + "  with the filter, a key per thread:   %.0f req/s (ratio %.3f)%n"
          + "  without the filter:                  %.0f req/s%n"
          + "  uptime before: %s%n  uptime after:  %s%n",
          THREADS, ROUND.toSeconds(), h, h / wo, k, k / wo, wo, before, uptime());
    }
  }

  /** Requests per second of {@code THREADS} clients looping on {@code uri} for {@code length}. */
  private static double round(HttpClient http, URI uri, Duration length, boolean ownKeys) throws Exception {
    LongAdder done = new LongAdder();
    long end = System.nanoTime() + length.toNanos();
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    try {
      List<Future<?>> fs = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        HttpRequest req = ownKeys ? HttpRequest.newBuilder(uri).header("X-Client", "load-" + t).build()
            : HttpRequest.newBuilder(uri).build();
        fs.add(pool.submit(() -> {
          while (System.nanoTime() < end) {
            HttpResponse<Void> r = http.send(req, HttpResponse.BodyHandlers.discarding());
            if (r.statusCode() != 200) {
              throw new AssertionError("status " + r.statusCode());
            }
            done.increment();
          }
          return null;
        }));
      }
      for (Future<?> f : fs) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
    }
    return done.sum() / (length.toNanos() / 1e9);
  }

  private static double median(double[] v) {
    double[] s = v.clone();
    java.util.Arrays.sort(s);
    return s[s.length / 2];
  }

  private static String uptime() throws Exception {
    Process p = new ProcessBuilder("uptime").redirectErrorStream(true).start();
    try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream()))) {
      return r.readLine();
    }
  }
}
