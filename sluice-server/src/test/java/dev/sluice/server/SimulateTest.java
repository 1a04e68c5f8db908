package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.memory.MemoryRateLimiter;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SimulateTest {
  @TempDir Path dir;

  @Test void boundaryChartAndTableShowTheFixedWindowsDoubleBurst() throws Exception {
    Path png = dir.resolve("boundary.png");
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = SluiceCli.run(new PrintWriter(out, true), new PrintWriter(err, true),
        "simulate", "--pattern", "boundary", "--limit", "100", "--window", "1s", "-o", png.toString());
    assertThat(code).as(err.toString()).isZero();

    byte[] bytes = Files.readAllBytes(png);
    assertThat(bytes.length).isGreaterThan(20_000).isLessThan(2_000_000);
    assertThat(java.util.Arrays.copyOf(bytes, 8)).containsExactly(0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a);
    java.awt.image.BufferedImage image = javax.imageio.ImageIO.read(png.toFile());
    assertThat(image.getWidth()).isEqualTo(1100);
    assertThat(image.getHeight()).isEqualTo(72 + 5 * 200);

    assertThat(out.toString()).startsWith("pattern boundary: 391 requests over 3s, 1 key, limit 100 per 1s\n")
        .containsPattern("fixed-window +391 +250 +141 +199 +199\n")
        .containsPattern("sliding-log +391 +156 +235 +100 +100\n")
        .endsWith("chart: " + png + "\n");
    assertThat(err.toString()).isEmpty(); // no progress bar on a short run
  }

  /**
   * Issue 19: the llm pattern reserves max_tokens and uses about 40% of it. Without settlement the
   * estimates are charged and the tenant gets well under its limit in tokens actually used; with
   * settlement what is charged is what was used, and the budget is spent on real tokens.
   */
  @Test void llmPatternShowsTheEstimateDriftWithoutSettlementAndNoneWithIt() throws Exception {
    long w = 1_000_000;
    Traffic t = Traffic.of(Traffic.Pattern.LLM, 1000, w, 5 * w, 0);
    assertThat(t.estimate).isEqualTo(50);
    Map<String, Simulation.Result> r = Simulation.run(t, Simulation.costPolicies(1000, Duration.ofSeconds(1)), w / 40,
            (p, ticker) -> MemoryRateLimiter.builder(p).ticker(ticker).build(), new ProgressBar(null, "", 1, false),
            Simulation.SETTLING)
        .stream().collect(Collectors.toMap(x -> x.policy().name(), Function.identity()));
    Simulation.Result reserveOnly = r.get("estimate-only");
    Simulation.Result settled = r.get("settled");
    assertThat(reserveOnly.charged()).isEqualTo(reserveOnly.admitted() * 50);
    assertThat(reserveOnly.used()).as("drift: far less used than charged").isLessThan(reserveOnly.charged() * 6 / 10);
    assertThat(settled.charged()).as("settled: charged = used").isEqualTo(settled.used());
    assertThat(settled.used()).as("the settled tenant gets its budget in real tokens").isGreaterThan(reserveOnly.used() * 3 / 2);
    assertThat(settled.used()).isLessThanOrEqualTo(6 * 1000 + 2 * 75); // five windows plus the weighted edge

    Path png = dir.resolve("llm.png");
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = SluiceCli.run(new PrintWriter(out, true), new PrintWriter(err, true),
        "simulate", "--pattern", "llm", "--limit", "1000", "--window", "1s", "-o", png.toString());
    assertThat(code).as(err.toString()).isZero();
    assertThat(javax.imageio.ImageIO.read(png.toFile()).getHeight()).isEqualTo(72 + 2 * 200);
    assertThat(out.toString()).startsWith("pattern llm: ")
        .containsPattern("estimate-only +used \\d+ tokens, charged \\d+ \\(estimate drift \\+\\d+\\)")
        .containsPattern("settled +used (\\d+) tokens, charged \\1 \\(estimate drift \\+0\\)");
  }

  @Test void sameNumbersDifferentBursts() {
    long w = 1_000_000;
    Traffic t = Traffic.of(Traffic.Pattern.BOUNDARY, 100, w, 3 * w, 0);
    Map<String, Simulation.Result> r = Simulation.run(t, Simulation.policies(100, Duration.ofSeconds(1)), w / 40,
            (p, ticker) -> MemoryRateLimiter.builder(p).ticker(ticker).build(), new ProgressBar(null, "", 1, false))
        .stream().collect(Collectors.toMap(x -> x.policy().name(), Function.identity()));
    // The fixed window admits up to twice its limit within 200 ms across its boundary...
    assertThat(r.get("fixed-window").mostAdmittedWithin(w / 5)).isEqualTo(199);
    // ...the exact log never more than the limit in any window, the weighted window and GCRA close to it.
    assertThat(r.get("sliding-log").mostAdmittedWithin(w)).isEqualTo(100);
    assertThat(r.get("sliding-window").mostAdmittedWithin(w / 5)).isBetween(100L, 110L);
    assertThat(r.get("gcra").mostAdmittedWithin(w / 5)).isBetween(100L, 120L);
    assertThat(r.get("gcra").admitted()).isEqualTo(r.get("token-bucket").admitted());
    for (Simulation.Result x : r.values()) {
      assertThat(x.admitted() + x.refused()).isEqualTo(t.size());
      assertThat(java.util.Arrays.stream(x.admittedPerBin()).sum()).isEqualTo(x.admitted());
    }
  }

  @Test void steadyAndBurstyTrafficIsHeldToTheLimitOverTime() {
    long w = 1_000_000;
    for (Traffic.Pattern p : List.of(Traffic.Pattern.STEADY, Traffic.Pattern.BURSTY)) {
      long duration = 6 * w;
      Traffic t = Traffic.of(p, 100, w, duration, 0);
      for (Simulation.Result r : Simulation.run(t, Simulation.policies(100, Duration.ofSeconds(1)), w / 40,
          (policy, ticker) -> MemoryRateLimiter.builder(policy).ticker(ticker).build(), new ProgressBar(null, "", 1, false))) {
        String what = p + " " + r.policy().name();
        assertThat(r.admitted() + r.refused()).as(what).isEqualTo(t.size());
        // Over six windows no algorithm admits more than its limit per window plus one initial burst...
        assertThat(r.admitted()).as(what).isLessThanOrEqualTo(7 * 100);
        // ...and the exact log never more than the limit in any window.
        if (r.policy().name().equals("sliding-log")) {
          assertThat(r.mostAdmittedWithin(w)).as(what).isEqualTo(100);
        }
      }
    }
    // Steady traffic at 1.5x the limit: every algorithm admits about the limit per window.
    Traffic steady = Traffic.of(Traffic.Pattern.STEADY, 100, w, 6 * w, 0);
    assertThat(steady.size()).isEqualTo(900);
    for (Simulation.Result r : Simulation.run(steady, Simulation.policies(100, Duration.ofSeconds(1)), w / 40,
        (policy, ticker) -> MemoryRateLimiter.builder(policy).ticker(ticker).build(), new ProgressBar(null, "", 1, false))) {
      assertThat(r.admitted()).as(r.policy().name()).isBetween(550L, 700L);
    }
  }

  @Test void sprayShowsTheKeyTableBoundWithAProgressBar() throws Exception {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = SluiceCli.run(new PrintWriter(out, true), new PrintWriter(err, true),
        "simulate", "--pattern", "spray", "--keys", "3000", "--max-keys", "1000", "--progress", "-o", dir.resolve("s.png").toString());
    assertThat(code).as(err.toString()).isZero();
    assertThat(err.toString()).contains("simulating [").contains("] 100% 15750/15750 requests");
    assertThat(out.toString()).contains("3001 keys").containsPattern("of the refusals were 'key table full'");
    assertThat(Files.size(dir.resolve("s.png"))).isGreaterThan(10_000);
  }

  @Test void badOptionsExitWith2() {
    assertThat(ServeProcessTest.runErr("simulate", "--pattern", "zigzag"))
        .isEqualTo("sluice: --pattern 'zigzag' is unknown; use steady, bursty, boundary, spray or llm");
    assertThat(ServeProcessTest.runErr("simulate", "--limit", "0"))
        .isEqualTo("sluice: limit 0 is not positive; it must be at least 1");
    assertThat(List.of(ServeProcessTest.runErr("simulate", "--bin", "1us", "--duration", "1h")).get(0))
        .contains("is not 1 to 100000 bins");
  }
}
