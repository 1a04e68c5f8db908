package dev.sluice.server;

import java.io.PrintWriter;

/** A one-line progress bar on stderr, redrawn at most once per percent. Off when not enabled. */
final class ProgressBar {
  private static final int WIDTH = 40;
  private final PrintWriter out;
  private final long total;
  private final boolean enabled;
  private final String label;
  private long done;
  private int shownPercent = -1;

  ProgressBar(PrintWriter out, String label, long total, boolean enabled) {
    this.out = out;
    this.label = label;
    this.total = Math.max(1, total);
    this.enabled = enabled;
  }

  void step() {
    done++;
    if (enabled) {
      int percent = (int) (done * 100 / total);
      if (percent != shownPercent) {
        shownPercent = percent;
        draw(percent);
      }
    }
  }

  void done() {
    if (enabled) {
      if (shownPercent != 100) {
        draw(100);
      }
      out.println();
      out.flush();
    }
  }

  private void draw(int percent) {
    int filled = Math.min(WIDTH, percent * WIDTH / 100);
    out.print("\r" + label + " [" + "#".repeat(filled) + " ".repeat(WIDTH - filled) + "] "
        + String.format("%3d%%", Math.min(100, percent)) + " " + Math.min(done, total) + "/" + total + " requests");
    out.flush();
  }
}
