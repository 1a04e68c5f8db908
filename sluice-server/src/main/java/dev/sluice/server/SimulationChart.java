package dev.sluice.server;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import javax.imageio.ImageIO;
import org.knowm.xchart.AnnotationLine;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.lines.SeriesLines;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * Draws a simulation as one PNG: a panel per algorithm, stacked, sharing the time axis. In each
 * panel the green area is the requests admitted per bin and the red area stacked on it the requests
 * refused, so the top of the red is the traffic offered. Dashed lines mark the window boundaries.
 */
final class SimulationChart {
  static final Color ADMITTED = new Color(46, 160, 67);
  static final Color REFUSED = new Color(218, 54, 51);
  private static final int PANEL_HEIGHT = 200;
  private static final int HEADER = 72;

  private SimulationChart() {}

  static void write(Path png, String title, String subtitle, List<Simulation.Result> results, long binMicros,
                    long windowMicros, long durationMicros, int width) throws IOException {
    long peak = 1;
    for (Simulation.Result r : results) {
      for (int i = 0; i < r.admittedPerBin().length; i++) {
        peak = Math.max(peak, r.admittedPerBin()[i] + r.refusedPerBin()[i]);
      }
    }
    BufferedImage image = new BufferedImage(width, HEADER + PANEL_HEIGHT * results.size(), BufferedImage.TYPE_INT_RGB);
    Graphics2D g = image.createGraphics();
    try {
      g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
      g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
      g.setColor(Color.WHITE);
      g.fillRect(0, 0, image.getWidth(), image.getHeight());
      g.setColor(Color.BLACK);
      g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 18));
      g.drawString(title, 16, 24);
      g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 13));
      String[] lines = subtitle.split("\n");
      for (int i = 0; i < lines.length && i < 2; i++) {
        g.drawString(lines[i], 16, 45 + 18 * i);
      }
      for (int i = 0; i < results.size(); i++) {
        XYChart chart = panel(results.get(i), binMicros, windowMicros, durationMicros, peak, width, i == results.size() - 1);
        Graphics2D pg = (Graphics2D) g.create(0, HEADER + i * PANEL_HEIGHT, width, PANEL_HEIGHT);
        try {
          chart.paint(pg, width, PANEL_HEIGHT);
        } finally {
          pg.dispose();
        }
      }
    } finally {
      g.dispose();
    }
    Path parent = png.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    ImageIO.write(image, "png", png.toFile());
  }

  private static XYChart panel(Simulation.Result r, long binMicros, long windowMicros, long durationMicros, long peak,
                               int width, boolean last) {
    int bins = r.admittedPerBin().length;
    // Step areas: two points per bin so each bin is a flat step.
    double[] x = new double[bins * 2];
    double[] admitted = new double[bins * 2];
    double[] offered = new double[bins * 2];
    for (int b = 0; b < bins; b++) {
      x[2 * b] = b * binMicros / 1e6;
      x[2 * b + 1] = (b + 1) * binMicros / 1e6;
      admitted[2 * b] = admitted[2 * b + 1] = r.admittedPerBin()[b];
      offered[2 * b] = offered[2 * b + 1] = r.admittedPerBin()[b] + r.refusedPerBin()[b];
    }
    XYChart chart = new XYChartBuilder().width(width).height(PANEL_HEIGHT)
        .title(r.policy().name() + ": " + r.admitted() + " admitted, " + r.refused() + " refused; most admitted in any "
            + Durations.format(windowMicros) + ": " + r.mostAdmittedWithin(windowMicros)
            + ", in any " + Durations.format(windowMicros / 5) + ": " + r.mostAdmittedWithin(windowMicros / 5))
        .xAxisTitle(last ? "seconds" : null)
        .yAxisTitle("per " + Durations.format(binMicros))
        .build();
    org.knowm.xchart.style.XYStyler s = chart.getStyler();
    chart.getStyler().setDefaultSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Area);
    s.setChartBackgroundColor(Color.WHITE);
    s.setPlotBackgroundColor(Color.WHITE);
    s.setPlotBorderVisible(false);
    s.setChartTitleBoxVisible(false);
    s.setChartTitleFont(new Font(Font.SANS_SERIF, Font.PLAIN, 13));
    s.setLegendPosition(Styler.LegendPosition.InsideNE);
    s.setLegendFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
    s.setAxisTitleFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
    s.setAxisTickLabelsFont(new Font(Font.SANS_SERIF, Font.PLAIN, 10));
    chart.getStyler().setXAxisMin(0.0);
    chart.getStyler().setXAxisMax(durationMicros / 1e6);
    chart.getStyler().setYAxisMin(0.0);
    chart.getStyler().setYAxisMax((double) peak);
    chart.getStyler().setPlotGridVerticalLinesVisible(false);
    XYSeries refused = chart.addSeries("refused", x, offered);
    refused.setFillColor(REFUSED);
    refused.setLineColor(REFUSED);
    refused.setMarker(SeriesMarkers.NONE);
    XYSeries ok = chart.addSeries("admitted", x, admitted);
    ok.setFillColor(ADMITTED);
    ok.setLineColor(ADMITTED);
    ok.setMarker(SeriesMarkers.NONE);
    s.setAnnotationLineColor(Color.DARK_GRAY);
    s.setAnnotationLineStroke(new BasicStroke(1f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {4f, 4f}, 0f));
    for (long t = windowMicros; t < durationMicros; t += windowMicros) {
      AnnotationLine line = new AnnotationLine(t / 1e6, true, false);
      chart.addAnnotation(line);
    }
    ok.setLineStyle(SeriesLines.SOLID);
    return chart;
  }
}
