package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Issue 32, item 5: a tag of {@code sluice.http.requests} from SpEL never has more distinct values
 * than its cap, whatever clients send: 100,000 requests with 100,000 distinct values on Spring MVC,
 * 5,000 on WebFlux, all on a real port; past the cap every new value is counted as {@code _other}
 * and no request goes uncounted.
 */
class HttpMetricTagsTest {
  static final int CAP = 50;

  static String[] tagged(boolean reactive) {
    return reactive
        ? new String[] {"spring.main.web-application-type=reactive", "sluice.http.metrics.tags[0].name=client",
            "sluice.http.metrics.tags[0].expression=header('X-Client')", "sluice.http.metrics.tags[0].max-values=" + CAP}
        : new String[] {"sluice.http.metrics.tags[0].name=client",
            "sluice.http.metrics.tags[0].expression=header('X-Client')", "sluice.http.metrics.tags[0].max-values=" + CAP};
  }

  @Test void springMvcNeverExceedsTheCapUnder100000DistinctValues() throws Exception {
    run(false, 100_000);
  }

  @Test void webFluxNeverExceedsTheCap() throws Exception {
    run(true, 5_000);
  }

  private static void run(boolean reactive, int total) throws Exception {
    try (ConfigurableApplicationContext app = Apps.start(tagged(reactive))) {
      Client c = Apps.client(app);
      c.warmUp("/open");
      AtomicInteger n = new AtomicInteger();
      String run = java.util.UUID.randomUUID().toString();
      // Every request a value of its own: X-Client is the tag's value (and the /load rule's key). Past
      // sluice.max-keys (10,000) distinct keys the memory store refuses (key table full): counted too.
      assertThat(answered(total, c, () -> run + "-" + n.getAndIncrement())).isEqualTo(total);
      MeterRegistry meters = app.getBean(MeterRegistry.class);
      Map<String, Double> byValue = new HashMap<>();
      for (Counter counter : meters.find("sluice.http.requests").tag("policy", "load").counters()) {
        byValue.merge(counter.getId().getTag("client"), counter.count(), Double::sum);
      }
      assertThat(byValue).hasSize(CAP + 1).containsKey(HttpTags.OTHER);
      assertThat(byValue.values().stream().mapToDouble(Double::doubleValue).sum()).isEqualTo(total);
      assertThat(byValue.get(HttpTags.OTHER)).isEqualTo(total - CAP);
    }
  }

  /** {@code total} requests to /load from 16 threads, each with the X-Client {@code ids} gives; the count answered 200 or 429. */
  static int answered(int total, Client c, java.util.function.Supplier<String> ids) throws Exception {
    AtomicInteger ok = new AtomicInteger();
    AtomicInteger next = new AtomicInteger();
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(16);
    try {
      java.util.List<java.util.concurrent.Future<?>> fs = new java.util.ArrayList<>();
      for (int t = 0; t < 16; t++) {
        fs.add(pool.submit(() -> {
          while (next.getAndIncrement() < total) {
            int status = c.get("/load", "X-Client", ids.get()).statusCode();
            if (status == 200 || status == 429) {
              ok.incrementAndGet();
            }
          }
        }));
      }
      for (java.util.concurrent.Future<?> f : fs) {
        f.get(10, java.util.concurrent.TimeUnit.MINUTES);
      }
    } finally {
      pool.shutdownNow();
    }
    return ok.get();
  }
}
