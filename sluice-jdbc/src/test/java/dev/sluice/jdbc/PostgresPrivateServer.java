package dev.sluice.jdbc;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * A private PostgreSQL 15 the test starts, stops, freezes and restarts: fault injection never
 * touches the shared server. Runs as the {@code postgres} OS user when the test runs as root, on a
 * free port in 5500-5599, in a temporary directory; pg_stat_statements is loaded, autovacuum is
 * off and wal_level is minimal so that server counters see only the test's own statements.
 */
final class PostgresPrivateServer implements AutoCloseable {
  static final String BIN = "/usr/lib/postgresql/15/bin/";

  final Path dir;
  final int port;
  private final boolean asRoot;

  private PostgresPrivateServer(Path dir, int port, boolean asRoot) {
    this.dir = dir;
    this.port = port;
    this.asRoot = asRoot;
  }

  /** Initializes and starts a server, or aborts the test (loudly) when PostgreSQL 15 binaries are absent. */
  static PostgresPrivateServer start() throws Exception {
    if (!Files.isExecutable(Path.of(BIN, "initdb"))) {
      String msg = "PostgreSQL 15 binaries not found at " + BIN + "; private-server tests skipped";
      if ("true".equals(System.getenv("CI"))) {
        throw new AssertionError(msg);
      }
      System.err.println("*** " + msg + " ***");
      Assumptions.abort(msg);
    }
    boolean root = "root".equals(System.getProperty("user.name"));
    Path dir = Files.createTempDirectory("sluice-pg-");
    if (root) {
      exec(List.of("chown", "postgres:postgres", dir.toString()), 10);
    }
    PostgresPrivateServer s = new PostgresPrivateServer(dir, freePort(), root);
    s.pg(List.of(BIN + "initdb", "-D", s.data(), "-A", "trust", "-U", "postgres", "--no-sync"), 120);
    Files.writeString(Path.of(s.data(), "postgresql.auto.conf"), String.join("\n",
        "port = " + s.port,
        "listen_addresses = '127.0.0.1'",
        "unix_socket_directories = '" + dir + "'",
        "shared_preload_libraries = 'pg_stat_statements'",
        "pg_stat_statements.track = 'all'",
        "autovacuum = off",
        "wal_level = minimal",
        "max_wal_senders = 0",
        "shared_buffers = '32MB'",
        "fsync = on",
        ""));
    if (root) {
      exec(List.of("chown", "postgres:postgres", s.data() + "/postgresql.auto.conf"), 10);
    }
    s.startServer();
    return s;
  }

  String data() {
    return dir.resolve("data").toString();
  }

  /** The database the limiters use; the test's observer stays in {@code postgres}, so per-database counters see only the limiter. */
  String url() {
    return url("sluice");
  }

  String url(String db) {
    return "jdbc:postgresql://127.0.0.1:" + port + "/" + db + "?user=postgres&connectTimeout=2&socketTimeout=10&assumeMinServerVersion=15";
  }

  void startServer() throws Exception {
    pg(List.of(BIN + "pg_ctl", "-D", data(), "-l", dir.resolve("log").toString(), "-w", "-t", "60", "start"), 90);
  }

  /** An immediate stop: like a crash, clients see their connections drop. */
  void stopServer() throws Exception {
    pg(List.of(BIN + "pg_ctl", "-D", data(), "-m", "immediate", "-w", "stop"), 60);
  }

  /** SIGSTOP (or SIGCONT) the postmaster and every process it started: the server stops answering. */
  void freeze(boolean frozen) throws Exception {
    String pid = Files.readAllLines(Path.of(data(), "postmaster.pid")).get(0).trim();
    List<String> pids = new ArrayList<>();
    pids.add(pid);
    for (String line : new String(new ProcessBuilder("ps", "-o", "pid=", "--ppid", pid).start().getInputStream()
        .readAllBytes()).split("\\s+")) {
      if (!line.isBlank()) {
        pids.add(line.trim());
      }
    }
    // The postmaster first (it must be there), then each child on its own: a backend that exited
    // between the listing and the signal (a client just disconnected) is no error.
    exec(List.of("kill", frozen ? "-STOP" : "-CONT", pids.get(0)), 10);
    for (String child : pids.subList(1, pids.size())) {
      new ProcessBuilder("kill", frozen ? "-STOP" : "-CONT", child).redirectErrorStream(true).start().waitFor();
    }
  }

  @Override public void close() {
    try {
      freeze(false);
    } catch (Exception ignored) {
      // not running
    }
    try {
      pg(List.of(BIN + "pg_ctl", "-D", data(), "-m", "immediate", "-w", "stop"), 60);
    } catch (Exception ignored) {
      // already stopped
    }
    try {
      exec(List.of("rm", "-rf", dir.toString()), 60);
    } catch (Exception e) {
      System.err.println("could not remove " + dir + ": " + e);
    }
  }

  private void pg(List<String> cmd, int seconds) throws Exception {
    List<String> full = new ArrayList<>();
    if (asRoot) {
      full.addAll(List.of("runuser", "-u", "postgres", "--"));
    }
    full.addAll(cmd);
    exec(full, seconds);
  }

  private static void exec(List<String> cmd, int seconds) throws Exception {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    byte[] out = p.getInputStream().readAllBytes();
    if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new IOException(cmd + " did not finish in " + seconds + " s");
    }
    if (p.exitValue() != 0) {
      throw new IOException(cmd + " exited " + p.exitValue() + ": " + new String(out));
    }
  }

  private static int freePort() throws IOException {
    int base = 5500 + ThreadLocalRandom.current().nextInt(100);
    for (int i = 0; i < 100; i++) {
      int port = 5500 + (base - 5500 + i) % 100;
      try (ServerSocket s = new ServerSocket(port)) {
        return s.getLocalPort();
      } catch (IOException busy) {
        // next
      }
    }
    throw new IOException("no free port in 5500-5599");
  }
}
