package dev.sluice.tck;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

/**
 * A TCP proxy of the fault kit's own, in front of a store on this machine: the network an unlucky
 * deployment has, on demand. It listens on an ephemeral loopback port per target (a Redis Cluster has
 * one target per node, each behind its own port, all under the same switches) and forwards bytes both
 * ways until told otherwise:
 *
 * <ul>
 *   <li>{@link #pass()}: forward at once (the default);
 *   <li>{@link #delay(Duration)}: hold every reply (server to client) that long;
 *   <li>{@link #dropNextReply()}: the next reply on any connection is swallowed and that connection
 *       closed on both sides: the store ran the command, the client never hears of it;
 *   <li>{@link #closeAll()}: drop every connection now (new ones are accepted);
 *   <li>{@link #refuse()}: refuse new connections (accepted and reset at once);
 *   <li>{@link #freeze()} and {@link #thaw()}: black-hole: connections are accepted and bytes both ways
 *       are held, not forwarded, until the thaw delivers them in order, as a frozen network or a server
 *       under SIGSTOP would. Bytes a client sent before it gave up on a frozen connection still reach
 *       the store at the thaw (a request that timed out may run later).
 * </ul>
 *
 * Why a proxy of its own rather than a fault injector: it runs wherever the tests run (no root, no
 * container, no extra process), its faults never touch the store behind it (a shared server is fine),
 * and each fault happens at a known instant, so a case can say what the store saw. Plain blocking
 * sockets: a reader and a writer thread per direction of each connection (all daemon), which keeps
 * held bytes in order without a selector loop. Thread-safe; {@link #close()} stops everything.
 */
public final class FaultProxy implements AutoCloseable {
  /** How long forwarding to a target may take to connect before the client's connection is reset. */
  private static final int CONNECT_MILLIS = 2_000;

  private final Map<Integer, ServerSocket> listeners = new LinkedHashMap<>(); // by target port
  private final Set<Link> links = ConcurrentHashMap.newKeySet();
  private final AtomicBoolean dropNext = new AtomicBoolean();
  private final AtomicLong dropped = new AtomicLong();
  private final AtomicLong held = new AtomicLong();
  private final AtomicLong accepted = new AtomicLong();
  private volatile boolean refusing;
  private volatile boolean closed;
  // guarded by this: what writers wait on
  private boolean frozen;
  private long delayNanos;

  private FaultProxy(List<InetSocketAddress> targets) throws IOException {
    try {
      for (InetSocketAddress target : targets) {
        ServerSocket listener = new ServerSocket(0, 128, InetAddress.getLoopbackAddress());
        listeners.put(target.getPort(), listener);
        daemon("sluice-fault-proxy-accept-" + listener.getLocalPort(), () -> accept(listener, target));
      }
    } catch (IOException | RuntimeException e) {
      close();
      throw e;
    }
  }

  /**
   * A proxy in front of each of {@code targetPorts} on 127.0.0.1, each on an ephemeral loopback port
   * of its own ({@link #portFor}); {@link #port()} is the first's.
   */
  public static FaultProxy toLoopback(int... targetPorts) throws IOException {
    if (targetPorts.length == 0) {
      throw new IllegalArgumentException("a fault proxy needs at least one target port");
    }
    List<InetSocketAddress> targets = new ArrayList<>();
    for (int port : targetPorts) {
      if (port < 1 || port > 65_535) {
        throw new IllegalArgumentException("target port " + port + " is not in 1..65535");
      }
      targets.add(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
    }
    return new FaultProxy(targets);
  }

  /** The port in front of the first target. */
  public int port() {
    return listeners.values().iterator().next().getLocalPort();
  }

  /** The port in front of {@code targetPort}. */
  public int portFor(int targetPort) {
    ServerSocket s = listeners.get(targetPort);
    if (s == null) {
      throw new IllegalArgumentException("this proxy forwards to " + listeners.keySet() + ", not to port " + targetPort);
    }
    return s.getLocalPort();
  }

  /** The loopback address the proxy listens on, {@code 127.0.0.1}. */
  public String host() {
    return InetAddress.getLoopbackAddress().getHostAddress();
  }

  // ------------------------------------------------------------------------------------------
  // The switches.
  // ------------------------------------------------------------------------------------------

  /** Back to normal: no delay, nothing frozen, new connections accepted, no reply to drop. */
  public void pass() {
    refusing = false;
    dropNext.set(false);
    synchronized (this) {
      frozen = false;
      delayNanos = 0;
      notifyAll();
    }
  }

  /** Holds every reply (server to client bytes) for {@code replies} after it arrived; zero forwards at once. */
  public void delay(Duration replies) {
    if (replies.isNegative()) {
      throw new IllegalArgumentException("a reply delay of " + replies + " is negative; zero forwards at once");
    }
    synchronized (this) {
      delayNanos = replies.toNanos();
      notifyAll();
    }
  }

  /** The next reply on any connection is swallowed and that connection closed on both sides. */
  public void dropNextReply() {
    dropNext.set(true);
  }

  /** Whether a {@link #dropNextReply()} still waits for its reply. */
  public boolean dropPending() {
    return dropNext.get();
  }

  /** How many replies {@link #dropNextReply()} has swallowed so far. */
  public long repliesDropped() {
    return dropped.get();
  }

  /** Drops every open connection now, bytes held included; new connections are still accepted. */
  public void closeAll() {
    for (Link l : links) {
      l.close();
    }
    synchronized (this) {
      notifyAll();
    }
  }

  /** New connections are accepted and reset at once, until {@link #pass()}; open ones carry on. */
  public void refuse() {
    refusing = true;
  }

  /** Holds every byte both ways (new connections too) until {@link #thaw()} or {@link #pass()}. */
  public void freeze() {
    synchronized (this) {
      frozen = true;
    }
  }

  /** Delivers what the freeze held, in order, and forwards again. */
  public void thaw() {
    synchronized (this) {
      frozen = false;
      notifyAll();
    }
  }

  /** Connections open through the proxy now. */
  public int connections() {
    return links.size();
  }

  /** Connections accepted and forwarded so far (refused ones not counted). */
  public long connectionsAccepted() {
    return accepted.get();
  }

  /** Bytes read from one side and not yet written to the other (held by a freeze or a delay, or in passage). */
  public long heldBytes() {
    return held.get();
  }

  /**
   * Waits until {@code condition} holds, polling every millisecond, for at most {@code limit}; true
   * when it held. The kit polls with deadlines instead of sleeping for fixed times.
   */
  public static boolean await(Duration limit, BooleanSupplier condition) {
    long deadline = System.nanoTime() + limit.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        return false;
      }
      try {
        Thread.sleep(1);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return condition.getAsBoolean();
      }
    }
    return true;
  }

  @Override public void close() {
    closed = true;
    for (ServerSocket s : listeners.values()) {
      closeQuietly(s);
    }
    closeAll();
  }

  // ------------------------------------------------------------------------------------------
  // Forwarding.
  // ------------------------------------------------------------------------------------------

  private void accept(ServerSocket listener, InetSocketAddress target) {
    while (!closed) {
      Socket client;
      try {
        client = listener.accept();
      } catch (IOException e) {
        return; // closed
      }
      if (refusing || closed) {
        reset(client);
        continue;
      }
      Socket server = new Socket();
      try {
        server.connect(target, CONNECT_MILLIS);
        client.setTcpNoDelay(true);
        server.setTcpNoDelay(true);
      } catch (IOException e) {
        closeQuietly(server);
        reset(client); // the store is down: the client sees its connection reset, as it would without us
        continue;
      }
      accepted.incrementAndGet();
      Link link = new Link(client, server);
      links.add(link);
      link.start(listener.getLocalPort());
    }
  }

  /** Waits until a chunk that arrived at {@code arrivedNanos} may be written; false when its link closed. */
  private synchronized boolean release(Link link, boolean reply, long arrivedNanos) throws InterruptedException {
    while (!link.closed.get()) {
      if (!frozen) {
        long wait = reply ? arrivedNanos + delayNanos - System.nanoTime() : 0;
        if (wait <= 0) {
          return true;
        }
        TimeUnit.NANOSECONDS.timedWait(this, wait);
      } else {
        wait(100); // woken by thaw, pass or closeAll; the timeout only rechecks a closed link
      }
    }
    return false;
  }

  /** One client connection and its connection to the target: a pump each way. */
  private final class Link {
    final Socket client;
    final Socket server;
    final AtomicBoolean closed = new AtomicBoolean();
    final AtomicLong open = new AtomicLong(2); // directions still running

    Link(Socket client, Socket server) {
      this.client = client;
      this.server = server;
    }

    void start(int port) {
      pump(client, server, false, "sluice-fault-proxy-" + port + "-request");
      pump(server, client, true, "sluice-fault-proxy-" + port + "-reply");
    }

    /** Reads {@code from} into a queue on one thread, writes it to {@code to} on another when released. */
    private void pump(Socket from, Socket to, boolean replies, String name) {
      LinkedBlockingQueue<Chunk> chunks = new LinkedBlockingQueue<>();
      daemon(name + "-read", () -> {
        byte[] buf = new byte[16 * 1024];
        try {
          InputStream in = from.getInputStream();
          for (int n; (n = in.read(buf)) > 0; ) {
            if (replies && dropNext.compareAndSet(true, false)) {
              dropped.incrementAndGet();
              close();
              break;
            }
            held.addAndGet(n);
            chunks.add(new Chunk(Arrays.copyOf(buf, n), System.nanoTime()));
          }
        } catch (IOException e) {
          // this side closed or reset
        }
        chunks.add(Chunk.END);
      });
      daemon(name + "-write", () -> {
        try {
          OutputStream out = to.getOutputStream();
          for (Chunk c = chunks.take(); c != Chunk.END; c = chunks.take()) {
            boolean go = release(this, replies, c.arrivedNanos());
            held.addAndGet(-c.bytes().length);
            if (go) {
              out.write(c.bytes());
              out.flush();
            }
          }
          to.shutdownOutput(); // the other side learns of the end after the bytes before it
        } catch (IOException | InterruptedException e) {
          close();
        } finally {
          for (Chunk left; (left = chunks.poll()) != null; ) {
            held.addAndGet(-left.bytes().length);
          }
          if (open.decrementAndGet() == 0) {
            close();
          }
        }
      });
    }

    void close() {
      if (closed.compareAndSet(false, true)) {
        closeQuietly(client);
        closeQuietly(server);
        links.remove(this);
        synchronized (FaultProxy.this) {
          FaultProxy.this.notifyAll();
        }
      }
    }
  }

  /** Bytes read from one side, and when; {@link #END} after the last. */
  private record Chunk(byte[] bytes, long arrivedNanos) {
    static final Chunk END = new Chunk(new byte[0], 0);
  }

  private static void reset(Socket s) {
    try {
      s.setSoLinger(true, 0); // RST: the client's connect fails, as against a port nobody listens on
    } catch (IOException e) {
      // closing anyway
    }
    closeQuietly(s);
  }

  private static void closeQuietly(AutoCloseable c) {
    try {
      c.close();
    } catch (Exception e) {
      // closing
    }
  }

  private static void daemon(String name, Runnable body) {
    Thread t = new Thread(body, name);
    t.setDaemon(true);
    t.start();
  }
}
