package dev.sluice.redis;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.stream.Collectors;

/**
 * What is logged through java.util.logging while it is open: the limiter's System.Logger, and Netty
 * and Lettuce, which log there when no SLF4J provider is present (as in these tests).
 */
final class CapturedLogs implements AutoCloseable {
  private final List<LogRecord> records = new CopyOnWriteArrayList<>();
  private final Logger root = Logger.getLogger("");
  private final Handler handler = new Handler() {
    @Override public void publish(LogRecord r) {
      records.add(r);
    }

    @Override public void flush() {}

    @Override public void close() {}
  };

  CapturedLogs() {
    handler.setLevel(Level.ALL);
    root.addHandler(handler);
  }

  /** Records at {@code level} or above, as "LEVEL logger: message [thrown]". */
  List<String> atLeast(Level level) {
    return records.stream().filter(r -> r.getLevel().intValue() >= level.intValue())
        .map(r -> r.getLevel() + " " + r.getLoggerName() + ": " + r.getMessage() + (r.getThrown() == null ? "" : " " + r.getThrown()))
        .collect(Collectors.toList());
  }

  @Override public void close() {
    root.removeHandler(handler);
  }
}
