package dev.sluice.http;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;

/**
 * A shared-store limiter whose store is down: every decision opens a real TCP connection to a port
 * nothing listens on, is refused by the kernel, and is decided by the failure mode, as a Redis or
 * PostgreSQL limiter decides when its server is unreachable.
 */
final class UnreachableStoreLimiter implements RateLimiter {
  private final Policy policy;
  private final FailureMode failureMode;
  private final int port;
  volatile int attempts;

  UnreachableStoreLimiter(Policy policy, FailureMode failureMode) throws IOException {
    this.policy = policy;
    this.failureMode = failureMode;
    try (ServerSocket s = new ServerSocket(0)) {
      this.port = s.getLocalPort(); // bound then closed: nothing listens there now
    }
  }

  @Override public Policy policy() { return policy; }

  @Override public Decision tryAcquire(String key, long permits, Policy p) {
    attempts++;
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 500);
      throw new IllegalStateException("a store answered on port " + port + "; the test needs it down");
    } catch (IOException e) {
      return failureMode.decide(p, key, permits, Reason.STORE_UNAVAILABLE, e, Ticker.system().nowMicros());
    }
  }

  @Override public Decision peek(String key, Policy p) { return tryAcquire(key, 1, p); }

  @Override public Refund refund(Ticket ticket) { return Refund.FAILED; }

  @Override public void reset(String key, Policy p) {}
}
