package dev.sluice.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Each switch of {@link FaultProxy} against an echo server of the test's own that counts what it received. */
class FaultProxyTest {
  private ServerSocket echo;
  private final AtomicLong received = new AtomicLong();
  private FaultProxy proxy;

  @BeforeEach void start() throws IOException {
    echo = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread t = new Thread(() -> {
      while (!echo.isClosed()) {
        try {
          Socket s = echo.accept();
          Thread c = new Thread(() -> {
            byte[] buf = new byte[1024];
            try (s) {
              for (int n; (n = s.getInputStream().read(buf)) > 0; ) {
                received.addAndGet(n);
                s.getOutputStream().write(buf, 0, n);
              }
            } catch (IOException e) {
              // client gone
            }
          });
          c.setDaemon(true);
          c.start();
        } catch (IOException e) {
          return;
        }
      }
    });
    t.setDaemon(true);
    t.start();
    proxy = FaultProxy.toLoopback(echo.getLocalPort());
  }

  @AfterEach void stop() throws IOException {
    proxy.close();
    echo.close();
  }

  private Socket connect() throws IOException {
    Socket s = new Socket(proxy.host(), proxy.port());
    s.setSoTimeout(5_000);
    return s;
  }

  private static String roundTrip(Socket s, String message) throws IOException {
    s.getOutputStream().write(message.getBytes(StandardCharsets.UTF_8));
    byte[] got = s.getInputStream().readNBytes(message.length());
    return new String(got, StandardCharsets.UTF_8);
  }

  @Test void passesBytesBothWays() throws IOException {
    try (Socket s = connect()) {
      assertThat(roundTrip(s, "ping")).isEqualTo("ping");
      assertThat(proxy.connections()).isEqualTo(1);
      assertThat(proxy.portFor(echo.getLocalPort())).isEqualTo(proxy.port());
    }
    assertThat(FaultProxy.await(Duration.ofSeconds(5), () -> proxy.connections() == 0)).isTrue();
  }

  @Test void delaysReplies() throws IOException {
    try (Socket s = connect()) {
      roundTrip(s, "warm");
      proxy.delay(Duration.ofMillis(150));
      long start = System.nanoTime();
      assertThat(roundTrip(s, "late")).isEqualTo("late");
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(150));
      proxy.pass();
      start = System.nanoTime();
      roundTrip(s, "fast");
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofMillis(150));
    }
  }

  @Test void dropsTheNextReplyAndClosesItsConnection() throws IOException {
    try (Socket s = connect()) {
      roundTrip(s, "warm");
      long before = received.get();
      proxy.dropNextReply();
      s.getOutputStream().write("lost".getBytes(StandardCharsets.UTF_8));
      assertThat(readOrEnd(s.getInputStream())).as("no reply, the connection closed").isEqualTo(-1);
      assertThat(received.get()).as("the server got the request").isEqualTo(before + 4);
      assertThat(proxy.repliesDropped()).isEqualTo(1);
      assertThat(proxy.dropPending()).isFalse();
    }
    try (Socket s = connect()) {
      assertThat(roundTrip(s, "next")).as("only one reply is dropped").isEqualTo("next");
    }
  }

  @Test void closesEveryConnection() throws IOException {
    try (Socket a = connect(); Socket b = connect()) {
      roundTrip(a, "a");
      roundTrip(b, "b");
      proxy.closeAll();
      assertThat(readOrEnd(a.getInputStream())).isEqualTo(-1);
      assertThat(readOrEnd(b.getInputStream())).isEqualTo(-1);
    }
    try (Socket s = connect()) {
      assertThat(roundTrip(s, "again")).isEqualTo("again");
    }
  }

  @Test void refusesNewConnectionsUntilPass() throws IOException {
    try (Socket open = connect()) {
      roundTrip(open, "x");
      proxy.refuse();
      try (Socket s = connect()) {
        s.getOutputStream().write('y');
        assertThat(readOrEnd(s.getInputStream())).isEqualTo(-1);
      } catch (IOException reset) {
        // the reset can reach the write already
      }
      assertThat(roundTrip(open, "still")).as("an open connection carries on").isEqualTo("still");
    }
    proxy.pass();
    try (Socket s = connect()) {
      assertThat(roundTrip(s, "back")).isEqualTo("back");
    }
  }

  @Test void freezeHoldsBytesUntilTheThawDeliversThem() throws Exception {
    try (Socket s = connect()) {
      roundTrip(s, "warm");
      long before = received.get();
      proxy.freeze();
      s.getOutputStream().write("held".getBytes(StandardCharsets.UTF_8));
      s.setSoTimeout(200);
      assertThatThrownBy(() -> s.getInputStream().read()).isInstanceOf(SocketTimeoutException.class);
      assertThat(received.get()).as("nothing reached the server").isEqualTo(before);
      assertThat(proxy.heldBytes()).isEqualTo(4);
      try (Socket fresh = connect()) {
        fresh.getOutputStream().write("new".getBytes(StandardCharsets.UTF_8));
        proxy.thaw();
        assertThat(new String(fresh.getInputStream().readNBytes(3), StandardCharsets.UTF_8)).isEqualTo("new");
      }
      s.setSoTimeout(5_000);
      assertThat(new String(s.getInputStream().readNBytes(4), StandardCharsets.UTF_8)).isEqualTo("held");
      assertThat(FaultProxy.await(Duration.ofSeconds(5), () -> proxy.heldBytes() == 0)).isTrue();
    }
  }

  @Test void bytesSentBeforeTheClientGaveUpOnAFreezeReachTheServerAtTheThaw() throws Exception {
    long before = received.get();
    try (Socket s = connect()) {
      proxy.freeze();
      s.getOutputStream().write("late".getBytes(StandardCharsets.UTF_8));
      assertThat(FaultProxy.await(Duration.ofSeconds(5), () -> proxy.heldBytes() == 4)).isTrue();
    }
    proxy.thaw();
    assertThat(FaultProxy.await(Duration.ofSeconds(5), () -> received.get() == before + 4)).isTrue();
  }

  @Test void refusesBadArguments() {
    assertThatThrownBy(FaultProxy::toLoopback).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("a fault proxy needs at least one target port");
    assertThatThrownBy(() -> FaultProxy.toLoopback(0)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("target port 0 is not in 1..65535");
    assertThatThrownBy(() -> proxy.portFor(1)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("this proxy forwards to [" + echo.getLocalPort() + "], not to port 1");
    assertThatThrownBy(() -> proxy.delay(Duration.ofMillis(-1))).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("a reply delay of PT-0.001S is negative; zero forwards at once");
  }

  /** The next byte, or -1 at the end of the stream or on a reset. */
  private static int readOrEnd(InputStream in) {
    try {
      return in.read();
    } catch (IOException reset) {
      return -1;
    }
  }
}
