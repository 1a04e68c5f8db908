package dev.sluice.server;

import java.io.IOException;
import java.nio.file.ClosedWatchServiceException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * {@code --watch}: runs the reload SIGHUP runs when the policy file's content changes (or Envoy
 * mode's configuration's, a file or a directory).
 *
 * <p>It watches the file's directory, not the file: editors save by writing a new file and renaming
 * it over the old one, and Kubernetes updates a mounted ConfigMap by swapping a symbolic link, and
 * neither is a modification of the file watched. So any event in the directory makes it read the
 * file (after {@link #SETTLE_MILLIS}, so that a save in several writes is read once, whole), and it
 * reloads only when the bytes differ from the last ones read: a touch, or a change to another file,
 * reloads nothing.
 */
final class PolicyWatch implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(PolicyWatch.class.getName());
  /** How long events are gathered before the file is read. */
  static final long SETTLE_MILLIS = 200;

  private final Path file;
  private final Runnable reload;
  private final WatchService watch;
  private final Thread thread;
  private byte[] last;

  private PolicyWatch(Path file, Runnable reload) throws IOException {
    this.file = file.toAbsolutePath();
    this.reload = reload;
    this.last = read();
    this.watch = FileSystems.getDefault().newWatchService();
    // A directory (Envoy mode's configuration may be one) is watched itself, and read as all its files.
    (Files.isDirectory(this.file) ? this.file : this.file.getParent()).register(watch, StandardWatchEventKinds.ENTRY_CREATE, StandardWatchEventKinds.ENTRY_MODIFY,
        StandardWatchEventKinds.ENTRY_DELETE);
    this.thread = new Thread(this::run, "sluice-policy-watch");
    thread.setDaemon(true);
  }

  /** Starts watching {@code file}; {@code reload} runs on the watch's own thread. */
  static PolicyWatch start(Path file, Runnable reload) throws IOException {
    PolicyWatch w = new PolicyWatch(file, reload);
    w.thread.start();
    return w;
  }

  private void run() {
    try {
      while (true) {
        WatchKey key = watch.take();
        // Gather the rest of this save before reading the file once.
        for (WatchKey more = key; more != null; more = watch.poll(SETTLE_MILLIS, TimeUnit.MILLISECONDS)) {
          more.pollEvents();
          more.reset();
        }
        byte[] now = read();
        if (now != null && !Arrays.equals(now, last)) {
          last = now;
          reload.run();
        }
      }
    } catch (InterruptedException | ClosedWatchServiceException e) {
      // closed: the service is stopping
    }
  }

  /**
   * The file's bytes (a directory's: each regular file's name and bytes, in name order), or null
   * while it is absent or unreadable (mid-swap): nothing to reload yet.
   */
  private byte[] read() {
    try {
      if (Files.isDirectory(file)) {
        java.io.ByteArrayOutputStream all = new java.io.ByteArrayOutputStream();
        try (java.util.stream.Stream<Path> files = Files.list(file)) {
          for (Path p : (Iterable<Path>) files.filter(Files::isRegularFile).sorted()::iterator) {
            all.write(p.getFileName().toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
            all.write(0);
            all.write(Files.readAllBytes(p));
          }
        }
        return all.toByteArray();
      }
      return Files.readAllBytes(file);
    } catch (IOException e) {
      LOG.log(System.Logger.Level.DEBUG, "policy file " + file + " not readable now: " + e);
      return null;
    }
  }

  @Override public void close() {
    try {
      watch.close();
    } catch (IOException e) {
      LOG.log(System.Logger.Level.DEBUG, "closing the policy watch: " + e);
    }
  }
}
