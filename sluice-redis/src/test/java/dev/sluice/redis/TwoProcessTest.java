package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Policy;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Two JVM processes with 16 threads each hammer one key on the shared Redis, under every algorithm, on
 * the server clock: together they admit exactly the limit. Then both reserve estimates and settle
 * random actuals on another key (issue 19): it is charged exactly the sum of both processes'
 * actuals. The second JVM runs {@link Hammer} from the test class path.
 */
class TwoProcessTest {
  @Test void twoProcessesOfSixteenThreadsAdmitExactlyTheLimit() throws Exception {
    var client = SharedRedis.client();
    String prefix = "twoproc-" + UUID.randomUUID().toString().substring(0, 8);
    String key = "hot-key";
    String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process child = new ProcessBuilder(java, "-cp", cp, Hammer.class.getName(), SharedRedis.URL, prefix, key)
        .redirectErrorStream(true).start();
    try {
      BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
      List<String> lines = new ArrayList<>();
      String line;
      while ((line = out.readLine()) != null && !line.equals("READY")) {
        lines.add(line);
      }
      assertThat(line).as("the second JVM started: %s", lines).isEqualTo("READY");

      long[] mine;
      long[] mySettled;
      long[] remaining;
      try (Hammer hammer = new Hammer(client, prefix, key)) {
        CountDownLatch go = new CountDownLatch(1);
        Writer in = new OutputStreamWriter(child.getOutputStream(), StandardCharsets.UTF_8);
        in.write("GO\n");
        in.flush();
        go.countDown();
        mine = hammer.run(go);
        mySettled = hammer.settle(1);
        String settledLine = null;
        while ((line = out.readLine()) != null) {
          if (line.startsWith("ADMITTED")) {
            lines.add(0, line);
          } else if (line.startsWith("SETTLED")) {
            settledLine = line;
            break;
          } else {
            lines.add(line);
          }
        }
        assertThat(settledLine).as("the second JVM's settlements; its output: %s", lines).isNotNull();
        lines.add(settledLine);
        remaining = hammer.costLimiters().stream().mapToLong(l -> l.peek(Hammer.COST_KEY).remaining()).toArray();
      }

      String result = null;
      String settled = null;
      for (String l : lines) {
        if (l.startsWith("ADMITTED")) {
          result = l;
        } else if (l.startsWith("SETTLED")) {
          settled = l;
        }
      }
      assertThat(child.waitFor(60, TimeUnit.SECONDS)).isTrue();
      assertThat(result).as("the second JVM's result; its output: %s", lines).isNotNull();
      String[] theirs = result.split(" ");
      List<Policy> policies = Hammer.policies(prefix);
      for (int i = 0; i < policies.size(); i++) {
        long other = Long.parseLong(theirs[i + 1]);
        System.out.println(policies.get(i).algorithm().id() + ": this JVM admitted " + mine[i] + ", the other " + other
            + " of " + 2 * Hammer.THREADS * Hammer.CALLS_PER_THREAD / policies.size() + " attempts");
        assertThat(mine[i] + other).as("admissions under %s", policies.get(i).algorithm().id()).isEqualTo(Hammer.LIMIT);
        assertThat(other).as("the other JVM took part").isPositive();
        assertThat(mine[i]).as("this JVM took part").isPositive();
      }
      String[] theirSettled = settled.split(" ");
      for (int i = 0; i < policies.size(); i++) {
        long sum = mySettled[i] + Long.parseLong(theirSettled[i + 1]);
        System.out.println(policies.get(i).algorithm().id() + ": the two JVMs settled actuals summing to " + sum
            + "; the key has " + remaining[i] + " of " + Hammer.COST_LIMIT + " left");
        assertThat(remaining[i]).as("charged = sum of both processes' actuals under %s", policies.get(i).algorithm().id())
            .isEqualTo(Hammer.COST_LIMIT - sum);
      }
    } finally {
      child.destroyForcibly();
    }
  }
}
