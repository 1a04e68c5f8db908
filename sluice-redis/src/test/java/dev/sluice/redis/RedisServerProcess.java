package dev.sluice.redis;

import org.junit.jupiter.api.Assumptions;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A private {@code redis-server} a test starts on its own port (7100-7199), for faults (stop, SIGSTOP,
 * kill) and clusters. Never the shared instance. Runs daemonized with no persistence; its pid comes
 * from its pid file.
 */
@SuppressWarnings("try")  // close() may be interrupted while waiting for the port to close; tests let that propagate
public final class RedisServerProcess implements AutoCloseable {
  public final int port;
  private final Path dir;
  private final List<String> extra;

  private RedisServerProcess(int port, List<String> extra) throws IOException {
    this.port = port;
    this.dir = Files.createTempDirectory("sluice-redis-" + port + "-");
    this.extra = extra;
  }

  /** Starts a server on {@code port} (killing a stale one left there by an aborted run). */
  public static RedisServerProcess start(int port, String... extraArgs) throws Exception {
    if (!onPath("redis-server") || !onPath("redis-cli")) {
      String why = "redis-server / redis-cli are not on the PATH";
      if ("true".equals(System.getenv("CI"))) {
        throw new AssertionError(why + " and CI=true: the private-server tests must run in CI");
      }
      System.err.println("!!! SKIPPING private-server Redis tests: " + why);
      Assumptions.abort(why);
    }
    run("redis-cli", "-p", Integer.toString(port), "shutdown", "nosave");  // a leftover from a killed run
    RedisServerProcess p = new RedisServerProcess(port, List.of(extraArgs));
    p.start();
    return p;
  }

  private static boolean onPath(String exe) {
    for (String d : System.getenv().getOrDefault("PATH", "").split(":")) {
      if (Files.isExecutable(Path.of(d, exe))) {
        return true;
      }
    }
    return false;
  }

  public String uri() {
    return "redis://127.0.0.1:" + port;
  }

  /** Starts (or restarts) the server and waits until it answers PING. */
  public void start() throws Exception {
    launch();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < deadline) {
      if (run("redis-cli", "-p", Integer.toString(port), "ping") == 0 && pid() > 0) {
        return;
      }
      Thread.sleep(20);
    }
    throw new IllegalStateException("redis-server on port " + port + " did not answer PING within 10 s");
  }

  /**
   * Starts (or restarts) the server without waiting for it: a test that times how soon after the
   * server's return something happens polls {@link #answersPing} for the instant it returned.
   */
  void launch() throws Exception {
    List<String> cmd = new ArrayList<>(List.of("redis-server", "--port", Integer.toString(port), "--bind", "127.0.0.1",
        "--dir", dir.toString(), "--pidfile", dir.resolve("redis.pid").toString(), "--save", "", "--appendonly", "no",
        "--daemonize", "yes", "--logfile", dir.resolve("redis.log").toString(), "--maxmemory-policy", "noeviction"));
    cmd.addAll(extra);
    int rc = run(cmd.toArray(String[]::new));
    if (rc != 0) {
      throw new IllegalStateException("redis-server on port " + port + " did not start (exit " + rc + ")");
    }
  }

  /** Whether the server answers PING now, asked on a fresh socket with no client library in between. */
  boolean answersPing() {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 100);
      s.setSoTimeout(100);
      s.getOutputStream().write("PING\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
      byte[] reply = s.getInputStream().readNBytes(7);
      return "+PONG\r\n".equals(new String(reply, java.nio.charset.StandardCharsets.US_ASCII));
    } catch (IOException down) {
      return false;
    }
  }

  long pid() throws IOException {
    Path f = dir.resolve("redis.pid");
    return Files.exists(f) ? Long.parseLong(Files.readString(f).trim()) : -1;
  }

  /** Orderly stop: SHUTDOWN NOSAVE, then waits until the port is closed. */
  public void stop() throws Exception {
    run("redis-cli", "-p", Integer.toString(port), "shutdown", "nosave");
    awaitPortClosed();
  }

  /** SIGKILL: the server dies without closing anything. */
  void kill() throws Exception {
    run("kill", "-KILL", Long.toString(pid()));
    awaitPortClosed();
  }

  /** SIGSTOP: the server keeps its sockets but answers nothing. */
  public void freeze() throws Exception {
    run("kill", "-STOP", Long.toString(pid()));
  }

  public void thaw() throws Exception {
    run("kill", "-CONT", Long.toString(pid()));
  }

  private void awaitPortClosed() throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < deadline) {
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", port), 100);
      } catch (IOException closed) {
        Files.deleteIfExists(dir.resolve("redis.pid"));
        return;
      }
      Thread.sleep(10);
    }
    throw new IllegalStateException("redis-server on port " + port + " is still listening");
  }

  static int run(String... cmd) throws Exception {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    if (!p.waitFor(30, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new IllegalStateException("timed out: " + String.join(" ", cmd));
    }
    return p.exitValue();
  }

  /** What {@code cmd} prints (standard output and error), waited for at most 30 s. */
  public static String output(String... cmd) throws Exception {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    p.waitFor(30, TimeUnit.SECONDS);
    return out;
  }

  @Override public void close() throws Exception {
    try {
      thaw();
    } catch (Exception ignored) {
      // not frozen
    }
    stop();
    try (var files = Files.list(dir)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        Files.deleteIfExists(f);
      }
    }
    Files.deleteIfExists(dir);
  }
}
