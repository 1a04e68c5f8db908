package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;

import dev.sluice.Policy;
import io.lettuce.core.RedisClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * Sentinel through a Lettuce URI: a private master (port 7130) watched by a private sentinel (7131);
 * the limiter is built from {@code redis-sentinel://127.0.0.1:7131#mymaster} and decides on the master.
 */
@SuppressWarnings("try")  // the master only needs to live for the try block
class RedisSentinelTest {
  @Test void aSentinelUriReachesTheMaster() throws Exception {
    try (RedisServerProcess master = RedisServerProcess.start(7130)) {
      Path dir = Files.createTempDirectory("sluice-sentinel-");
      Path conf = dir.resolve("sentinel.conf");
      Files.writeString(conf, "sentinel monitor mymaster 127.0.0.1 7130 1\n");
      Path pid = dir.resolve("sentinel.pid");
      RedisServerProcess.run("redis-cli", "-p", "7131", "shutdown", "nosave");
      assertThat(RedisServerProcess.run("redis-server", conf.toString(), "--sentinel", "--port", "7131", "--bind", "127.0.0.1",
          "--daemonize", "yes", "--pidfile", pid.toString(), "--logfile", dir.resolve("sentinel.log").toString(),
          "--dir", dir.toString())).isZero();
      RedisClient client = null;
      try {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!RedisServerProcess.output("redis-cli", "-p", "7131", "sentinel", "get-master-addr-by-name", "mymaster").contains("7130")) {
          assertThat(System.nanoTime()).as("sentinel knows the master").isLessThan(deadline);
          Thread.sleep(20);
        }
        client = RedisClient.create("redis-sentinel://127.0.0.1:7131#mymaster");
        Policy p = Policy.slidingWindow("sentinel-" + UUID.randomUUID().toString().substring(0, 8), 2, Duration.ofMinutes(1));
        try (RedisRateLimiter l = RedisRateLimiter.builder(p, client).build()) {
          Decision d = l.tryAcquire("k", 2);
          assertThat(d.allowed()).isTrue();
          assertThat(d.path()).isEqualTo(dev.sluice.Path.PRIMARY);
          assertThat(l.tryAcquire("k").allowed()).isFalse();
        }
        assertThat(RedisServerProcess.output("redis-cli", "-p", "7130", "--scan", "--pattern", "sluice:*"))
            .as("the state lives on the master").contains(RedisRateLimiter.storedKey(p, "k"));
      } finally {
        if (client != null) {
          client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        }
        if (Files.exists(pid)) {
          RedisServerProcess.run("kill", Files.readString(pid).trim());
        }
        long gone = System.nanoTime() + 5_000_000_000L;
        while (RedisServerProcess.run("redis-cli", "-p", "7131", "ping") == 0 && System.nanoTime() < gone) {
          Thread.sleep(20);
        }
        RedisServerProcess.run("rm", "-rf", dir.toString());  // best effort: the sentinel may still be flushing its log
      }
    }
  }
}
