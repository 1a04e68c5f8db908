package dev.sluice.server;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * Counts the requests being handled, and serves every request it is given, during a stop too.
 *
 * <p>Jetty's {@code GracefulHandler} answers 503 to any request that arrives once a stop began, which
 * on an open keep-alive connection is a refusal the API never documents. The drain is the
 * connector's instead: a stopping connector accepts no connection, and Jetty marks each response
 * it sends from then on non-persistent ({@code Connection: close}), so a connection's last answer
 * tells its client to go elsewhere; the server stops once every connection has closed.
 */
final class InFlightHandler extends Handler.Wrapper {
  private final AtomicLong inFlight = new AtomicLong();
  private final ServerMetrics metrics;

  InFlightHandler(Handler handler, ServerMetrics metrics) {
    super(handler);
    this.metrics = metrics;
  }

  long count() {
    return inFlight.get();
  }

  @Override public boolean handle(Request request, Response response, Callback callback) throws Exception {
    inFlight.incrementAndGet();
    Done done = new Done(callback, request, response);
    try {
      if (!super.handle(request, response, done)) {
        done.finish();
        return false;
      }
      return true;
    } catch (Throwable t) {
      done.finish();
      throw t;
    }
  }

  /** The request's callback, counting it out once, whichever way it ends. */
  private final class Done extends Callback.Nested {
    private final AtomicBoolean finished = new AtomicBoolean();
    private final Request request;
    private final Response response;
    private final long start = System.nanoTime();

    Done(Callback callback, Request request, Response response) {
      super(callback);
      this.request = request;
      this.response = response;
    }

    void finish() {
      if (finished.compareAndSet(false, true)) {
        inFlight.decrementAndGet();
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
