package dev.sluice.server.envoy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * What the server logs while this is open, line by line: the service's own System.Logger (through
 * slf4j-simple, which writes to the current {@code System.err}) and grpc-java's java.util.logging
 * records (each record one line, a stack trace one line per frame), so a test can count lines.
 */
final class CapturedLogs implements AutoCloseable {
  private final PrintStream original = System.err;
  private final ByteArrayOutputStream err = new ByteArrayOutputStream();
  private final List<String> records = new CopyOnWriteArrayList<>();
  private final Logger root = Logger.getLogger("");
  private final Handler handler = new Handler() {
    @Override public void publish(LogRecord r) {
      if (r.getLevel().intValue() >= Level.INFO.intValue()) {
        records.add(r.getLevel() + " " + r.getLoggerName() + ": " + r.getMessage());
        for (Throwable t = r.getThrown(); t != null; t = t.getCause()) {
          records.add(t.toString());
          for (StackTraceElement e : t.getStackTrace()) {
            records.add("\tat " + e);
          }
        }
      }
    }

    @Override public void flush() {}

    @Override public void close() {}
  };

  CapturedLogs() {
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    handler.setLevel(Level.ALL);
    root.addHandler(handler);
  }

  /** Every line logged so far. */
  List<String> lines() {
    List<String> lines = new ArrayList<>(records);
    String text;
    synchronized (err) {
      text = err.toString(StandardCharsets.UTF_8);
    }
    text.lines().forEach(lines::add);
    return lines;
  }

  @Override public void close() {
    root.removeHandler(handler);
    System.setErr(original);
    original.print(err.toString(StandardCharsets.UTF_8));
  }
}
