package dev.sluice.grpc;

import io.grpc.ServerCall;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * The listener a call has while its decision is on the way: it keeps the transport's events in
 * order and hands them to the real listener once there is one ({@link #start}), then steps aside.
 * The transport delivers events one at a time; {@link #start} runs once, on the thread the decision
 * resumes on, and events that arrive while it drains the earlier ones join the queue, so the real
 * listener is never called from two threads at once (grpc-java's delayed-call pattern).
 */
final class DelayedListener<Q> extends ServerCall.Listener<Q> {
  private List<Consumer<ServerCall.Listener<Q>>> pending = new ArrayList<>();
  private ServerCall.Listener<Q> delegate;
  private volatile boolean passThrough;

  /**
   * Delivers the queued events to {@code listener}, then every later one directly. An exception from
   * the listener stops the delivery and is thrown to the caller, which closes the call.
   */
  void start(ServerCall.Listener<Q> listener) {
    synchronized (this) {
      delegate = listener;
    }
    while (true) {
      List<Consumer<ServerCall.Listener<Q>>> batch;
      synchronized (this) {
        if (pending.isEmpty()) {
          pending = null;
          passThrough = true;
          return;
        }
        batch = pending;
        pending = new ArrayList<>();
      }
      for (Consumer<ServerCall.Listener<Q>> event : batch) {
        event.accept(listener);
      }
    }
  }

  private void event(Consumer<ServerCall.Listener<Q>> event) {
    if (!passThrough) {
      synchronized (this) {
        if (!passThrough) {
          pending.add(event);
          return;
        }
      }
    }
    event.accept(delegate);
  }

  @Override public void onMessage(Q message) {
    event(l -> l.onMessage(message));
  }

  @Override public void onHalfClose() {
    event(ServerCall.Listener::onHalfClose);
  }

  @Override public void onCancel() {
    event(ServerCall.Listener::onCancel);
  }

  @Override public void onComplete() {
    event(ServerCall.Listener::onComplete);
  }

  @Override public void onReady() {
    event(ServerCall.Listener::onReady);
  }
}
