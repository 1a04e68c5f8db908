package dev.sluice.grpc;

import dev.sluice.RateLimiter;
import dev.sluice.Ticket;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.Status;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An admitted call: its response carries the decision's limit fields (in the headers, or in the
 * trailers of a call that closes without sending headers), and its ticket goes back once when the
 * call ends with a status the user named. The refund runs on the interceptor's executor, never on the
 * call's thread: on a remote store it is a round trip.
 */
final class LimitedCall<Q, R> extends ForwardingServerCall.SimpleForwardingServerCall<Q, R> {
  private static final System.Logger LOG = System.getLogger(LimitedCall.class.getName());

  private final Metadata limits;
  private final RateLimiter limiter;
  private final Ticket ticket;
  private final Set<Status.Code> refundOn;
  private final Executor executor;
  private final AtomicBoolean ended = new AtomicBoolean();
  private boolean headersSent;

  LimitedCall(ServerCall<Q, R> call, Metadata limits, RateLimiter limiter, Ticket ticket, Set<Status.Code> refundOn,
              Executor executor) {
    super(call);
    this.limits = limits;
    this.limiter = limiter;
    this.ticket = ticket;
    this.refundOn = refundOn;
    this.executor = executor;
  }

  @Override public void sendHeaders(Metadata headers) {
    headersSent = true;
    headers.merge(limits);
    super.sendHeaders(headers);
  }

  @Override public void close(Status status, Metadata trailers) {
    if (!headersSent) {
      trailers.merge(limits); // a trailers-only response: the fields go there
    }
    ended(status.getCode());
    super.close(status, trailers);
  }

  /** The call ended with {@code code} (closed by the handler, cancelled, or the handler threw): refund once if named. */
  void ended(Status.Code code) {
    if (ticket == null || !ended.compareAndSet(false, true) || !refundOn.contains(code)) {
      return;
    }
    try {
      executor.execute(() -> limiter.refund(ticket));
    } catch (RuntimeException rejected) {
      LOG.log(System.Logger.Level.WARNING, "the refund of a call that ended " + code + " was not run ("
          + rejected + "); its permits stay charged");
    }
  }

  /** The application's listener, watched for the ends the call itself does not see: a cancel, a throw. */
  ServerCall.Listener<Q> watch(ServerCall.Listener<Q> listener) {
    if (ticket == null || refundOn.isEmpty()) {
      return listener;
    }
    return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(listener) {
      @Override public void onMessage(Q message) {
        guarded(() -> super.onMessage(message));
      }

      @Override public void onHalfClose() {
        guarded(super::onHalfClose);
      }

      @Override public void onReady() {
        guarded(super::onReady);
      }

      @Override public void onCancel() {
        ended(Status.Code.CANCELLED);
        super.onCancel();
      }

      private void guarded(Runnable event) {
        try {
          event.run();
        } catch (RuntimeException | Error e) {
          ended(Status.Code.UNKNOWN); // grpc-java answers a handler's throw with UNKNOWN
          throw e;
        }
      }
    };
  }
}
