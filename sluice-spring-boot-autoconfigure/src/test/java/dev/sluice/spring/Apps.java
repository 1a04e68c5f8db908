package dev.sluice.spring;

import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/** Test applications started by hand (several in one test, on random ports), and a 16-thread hammer. */
final class Apps {
  private Apps() {}

  /**
   * Starts the test application on a random port with {@code properties}, given as command-line
   * arguments so that they override application.yaml (as a test's own properties do).
   */
  static ConfigurableApplicationContext start(String... properties) {
    return startWith(new Class<?>[0], properties);
  }

  /** {@link #start} with {@code beans} (classes no component scan finds) registered beside the test application's. */
  static ConfigurableApplicationContext startWith(Class<?>[] beans, String... properties) {
    List<String> args = new ArrayList<>(List.of("--server.port=0"));
    for (String p : properties) {
      args.add("--" + p);
    }
    return new SpringApplicationBuilder(TestApp.class).sources(beans).run(args.toArray(new String[0]));
  }

  static Client client(ConfigurableApplicationContext app) {
    // The port property, not WebServerApplicationContext: that type moved in Spring Boot 4.
    return new Client(app.getEnvironment().getRequiredProperty("local.server.port", Integer.class));
  }

  /**
   * Sends {@code total} requests from 16 threads, the i-th through {@code clients[i % n]}, and counts
   * the answers with status 200; any status but 200 and {@code refusedStatus} fails.
   */
  static int admitted(int total, int refusedStatus, Supplier<String> path, String clientId, Client... clients) throws Exception {
    AtomicInteger ok = new AtomicInteger();
    AtomicInteger next = new AtomicInteger();
    List<String> unexpected = new java.util.concurrent.CopyOnWriteArrayList<>();
    ExecutorService pool = Executors.newFixedThreadPool(16);
    try {
      List<Future<?>> fs = new ArrayList<>();
      for (int t = 0; t < 16; t++) {
        fs.add(pool.submit(() -> {
          for (int i = next.getAndIncrement(); i < total; i = next.getAndIncrement()) {
            HttpResponse<String> r = clients[i % clients.length].get(path.get(), "X-Client", clientId);
            if (r.statusCode() == 200) {
              ok.incrementAndGet();
            } else if (r.statusCode() != refusedStatus) {
              unexpected.add(r.statusCode() + " " + r.body());
            }
          }
        }));
      }
      for (Future<?> f : fs) {
        f.get(120, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    if (!unexpected.isEmpty()) {
      throw new AssertionError("unexpected answers: " + unexpected.subList(0, Math.min(5, unexpected.size())));
    }
    return ok.get();
  }
}
