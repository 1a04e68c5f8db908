/**
 * The Sluice service and CLI ({@code sluice serve}, {@code sluice simulate}). An application, not a
 * library: it exports nothing.
 */
@SuppressWarnings("requires-automatic") // picocli, lettuce, micrometer and XChart ship no module descriptor
module dev.sluice.server {
  requires dev.sluice.core;
  requires dev.sluice.redis;
  requires dev.sluice.jdbc;
  requires dev.sluice.kernel;
  requires dev.sluice.http;
  requires dev.sluice.micrometer;
  requires lettuce.core;
  requires com.zaxxer.hikari;
  requires java.sql;
  requires info.picocli;
  requires com.fasterxml.jackson.databind;
  requires com.fasterxml.jackson.dataformat.yaml;
  requires org.eclipse.jetty.server;
  requires micrometer.core;
  requires micrometer.registry.prometheus;
  requires org.knowm.xchart;
  requires java.desktop;
  requires api;
  requires io.grpc;
  requires io.grpc.stub;
  requires io.grpc.services;
  requires io.grpc.netty.shaded;
  requires com.google.protobuf;
  requires org.yaml.snakeyaml;
  requires jdk.unsupported; // sun.misc.Signal: SIGTERM and SIGINT drain and exit 0 (Signals)

  opens dev.sluice.server to info.picocli;
}
