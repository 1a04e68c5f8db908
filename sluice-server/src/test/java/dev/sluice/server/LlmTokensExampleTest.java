package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Issue 19: {@code examples/llm-tokens} runs as its javadoc says (the JDK's source launcher against
 * sluice-core's classes), so the example cannot drift from the API.
 */
class LlmTokensExampleTest {

  @Test void theLlmTokensExampleReservesMaxTokensAndSettlesWhatEachCallUsed() throws Exception {
    Path root = Path.of("..").toAbsolutePath().normalize();
    Path source = root.resolve("examples/llm-tokens/LlmTokens.java");
    Path core = root.resolve("sluice-core/target/classes");
    assertThat(source).exists();
    assertThat(core.resolve("dev/sluice/Settlement.class")).exists();
    String java = ProcessHandle.current().info().command().orElse("java");
    Process p = new ProcessBuilder(java, "-cp", core.toString(), source.toString()).redirectErrorStream(true).start();
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("the example finishes").isTrue();
    String printed = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.exitValue()).as(printed).isZero();
    // Reserving 1,200-1,500 tokens a call, 20,000 a minute would admit about 15 calls a tenant in a
    // minute; settling at the ~700 each used admits more than twice that.
    assertThat(printed).matches("acme: \\d+ calls admitted, \\d+ refused, \\d+ tokens used, \\d+ of 20000 left this minute\n"
        + "globex: \\d+ calls admitted, \\d+ refused, \\d+ tokens used, \\d+ of 20000 left this minute\n");
    long acme = Long.parseLong(printed.substring("acme: ".length(), printed.indexOf(' ', "acme: ".length())));
    assertThat(acme).isGreaterThan(30);
    assertThat(Files.readString(source)).contains("tokens.settle(d.ticket().orElseThrow(), actual)");
  }
}
