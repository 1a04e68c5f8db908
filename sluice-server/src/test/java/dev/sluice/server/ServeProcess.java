package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** {@code sluice serve} as a child process: started, signalled by its pid, its output and exit status read. */
final class ServeProcess implements AutoCloseable {
  /** The banner's address line: the URI, or a wildcard bound and then the URI to try from this host. */
  private static final Pattern LISTENING = Pattern.compile("sluice: listening on (?:\\S+ \\(every address of this host\\), e\\.g\\. )?"
      + "(http://127\\.0\\.0\\.1:\\d+)$");

  final Process process;
  final Path output;
  final URI base;

  private ServeProcess(Process process, Path output, URI base) {
    this.process = process;
    this.output = output;
    this.base = base;
  }

  /** Starts {@code sluice serve ARGS} and waits (polling its output, 30 s at most) for the whole banner; reads its address. */
  static ServeProcess start(Path dir, String... args) throws Exception {
    return start(dir, List.of(), args);
  }

  /** As {@link #start(Path, String...)}, run under {@code prefix} (e.g. {@code nohup}). */
  static ServeProcess start(Path dir, List<String> prefix, String... args) throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<String> command = new ArrayList<>(prefix);
    command.addAll(List.of(java, "-cp", System.getProperty("java.class.path"), "dev.sluice.server.SluiceCli", "serve"));
    command.addAll(List.of(args));
    Path output = Files.createTempFile(dir, "serve", ".out");
    Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(output.toFile()).start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() < deadline && p.isAlive()) {
      List<String> lines = Files.readAllLines(output);
      if (lines.stream().anyMatch(l -> l.startsWith("sluice: stop with"))) { // the banner's last line
        for (String line : lines) {
          Matcher m = LISTENING.matcher(line);
          if (m.find()) {
            return new ServeProcess(p, output, URI.create(m.group(1)));
          }
        }
      }
      Thread.sleep(20); // polling the child's output, not waiting for time to pass
    }
    p.destroyForcibly();
    throw new AssertionError("no banner within 30 s: " + Files.readAllLines(output));
  }

  /** Sends {@code signal} (TERM, INT, HUP) to the child by its pid. */
  void signal(String signal) throws Exception {
    Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).inheritIO().start();
    assertThat(kill.waitFor()).as("kill -%s %d", signal, process.pid()).isZero();
  }

  /** Waits (30 s at most) for the child to exit and returns its exit status. */
  int exitStatus() throws InterruptedException {
    assertThat(process.waitFor(30, TimeUnit.SECONDS)).as("exited within 30 s; output %s", lines()).isTrue();
    return process.exitValue();
  }

  List<String> lines() {
    try {
      return Files.readAllLines(output);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Polls (10 s at most) until a line of the output contains {@code text}. */
  void awaitLine(String text) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (lines().stream().noneMatch(l -> l.contains(text))) {
      assertThat(System.nanoTime()).as("no line with '%s' within 10 s: %s", text, lines()).isLessThan(deadline);
      Thread.sleep(20); // polling the child's output with a deadline
    }
  }

  @Override public void close() {
    process.destroyForcibly();
  }
}
