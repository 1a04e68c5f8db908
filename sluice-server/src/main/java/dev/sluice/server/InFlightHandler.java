package dev.sluice.server;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpHeaderValue;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * Counts the requests being handled, and serves every request it is given, during a stop too.
 *
 * <p>Jetty's {@code GracefulHandler} answers 503 to any request that arrives once a stop began, which
 * on an open keep-alive connection is a refusal the API never documents. The drain is the
 * connector's instead: a stopping connector accepts no connection, and every answer from the start
 * of the drain carries {@code Connection: close} ({@link #drain}), so a connection's last answer
 * tells its client to go elsewhere; the server stops once every connection has closed.
 */
final class InFlightHandler extends Handler.Wrapper {
  private final AtomicLong inFlight = new AtomicLong();
  /** Requests in flight whose answer may go out without {@code Connection: close}. */
  private final AtomicLong unmarked = new AtomicLong();
  private volatile boolean draining;
  private final ServerMetrics metrics;

  InFlightHandler(Handler handler, ServerMetrics metrics) {
    super(handler);
    this.metrics = metrics;
  }

  long count() {
    return inFlight.get();
  }

  /**
   * From now on every answer carries {@code Connection: close}, set before the handler writes it.
   * The stop calls this before it shuts the connector down, and shuts it down only once
   * {@link #unmarked()} is 0: Jetty closes a connection whose answer was already under way without
   * that header when the connector shut down (it cannot add it any more), and the client, told
   * nothing, sent its next request into the closed connection. Marked here first, every
   * connection's last answer says so.
   */
  void drain() {
    draining = true;
  }

  /** Requests in flight whose answers began before {@link #drain}, so without {@code Connection: close}. */
  long unmarked() {
    return unmarked.get();
  }

  @Override public boolean handle(Request request, Response response, Callback callback) throws Exception {
    inFlight.incrementAndGet();
    Marking marking = new Marking(request, response);
    Done done = new Done(callback, request, response, marking);
    try {
      if (!super.handle(request, marking, done)) {
        done.finish();
        return false;
      }
      return true;
    } catch (Throwable t) {
      done.finish();
      throw t;
    }
  }

  /**
   * The response as the handler sees it: at its first write (when its head is committed) it says
   * {@code Connection: close} if a drain began, and otherwise counts as {@link #unmarked} until the
   * request ends. Reading the flag after counting means a drain that missed this answer waits for it.
   */
  private final class Marking extends Response.Wrapper {
    private boolean written; // the handler's writes are sequential
    volatile boolean unmarked;

    Marking(Request request, Response response) {
      super(request, response);
    }

    @Override public void write(boolean last, java.nio.ByteBuffer content, Callback callback) {
      if (!written) {
        written = true;
        InFlightHandler.this.unmarked.incrementAndGet();
        if (draining) {
          getHeaders().put(HttpHeader.CONNECTION, HttpHeaderValue.CLOSE.asString());
          InFlightHandler.this.unmarked.decrementAndGet();
        } else {
          unmarked = true;
        }
      }
      super.write(last, content, callback);
    }
  }

  /** The request's callback, counting it out once, whichever way it ends. */
  private final class Done extends Callback.Nested {
    private final AtomicBoolean finished = new AtomicBoolean();
    private final Request request;
    private final Response response;
    private final Marking marking;
    private final long start = System.nanoTime();

    Done(Callback callback, Request request, Response response, Marking marking) {
      super(callback);
      this.request = request;
      this.response = response;
      this.marking = marking;
    }

    void finish() {
      if (finished.compareAndSet(false, true)) {
        inFlight.decrementAndGet();
        if (marking.unmarked) {
          unmarked.decrementAndGet();
        }
        metrics.httpRequest(request.getMethod(), response.getStatus(), System.nanoTime() - start);
      }
    }

    @Override public void succeeded() {
      finish();
      super.succeeded();
    }

    @Override public void failed(Throwable x) {
      finish();
      super.failed(x);
    }
  }
}
