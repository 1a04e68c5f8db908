package dev.sluice.hazelcast;

/** The three-member cluster the conformance kit and the plain tests share, started once per test JVM. */
final class SharedCluster {
  private static Cluster cluster;

  private SharedCluster() {}

  static synchronized Cluster get() {
    if (cluster == null) {
      cluster = Cluster.start(5811, 3);
      Runtime.getRuntime().addShutdownHook(new Thread(() -> cluster.close()));
    }
    return cluster;
  }
}
