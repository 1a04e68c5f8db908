package dev.sluice.server;

import dev.sluice.server.ApiHandler.ApiError;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BiConsumer;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.util.thread.Scheduler;

/**
 * Reads a request body without holding a thread while it arrives, within a deadline.
 *
 * <p>A blocking read parks a request thread for as long as the client takes to send: 70 clients
 * sending their bodies slowly held all 64 of Jetty's threads, and {@code /healthz} stopped answering
 * (issue 27, finding 1). Here the body is read as Jetty's demand callbacks say bytes are there, so a
 * slow body costs a buffer, not a thread; and once {@code --body-timeout} has passed since the
 * headers, the request is answered 408 and its connection closed, whatever is still to come. A
 * client that ends its side before the body is whole gets a 400. Exactly one of these answers is
 * given, whichever comes first: the whole body, its failure, or the deadline.
 */
final class RequestBody implements Runnable {
  private final Request request;
  private final long timeoutMillis;
  private final long declared;
  private final BiConsumer<byte[], ApiError> done;
  private final AtomicBoolean finished = new AtomicBoolean();
  private volatile Scheduler.Task deadline;
  /** Set when the body is read only to be dropped, so that the client reads this answer rather than a reset (413, 415). */
  private ApiError refusal;
  private byte[] bytes = new byte[512];
  private int size;
  private volatile long received;

  private RequestBody(Request request, long timeoutMillis, ApiError refusal, BiConsumer<byte[], ApiError> done) {
    this.request = request;
    this.timeoutMillis = timeoutMillis;
    this.declared = request.getLength();
    this.refusal = refusal;
    this.done = done;
  }

  /**
   * Reads {@code request}'s body, then calls {@code done} once: with the bytes, or with the error to
   * answer. With a {@code refusal}, the body (up to {@link JsonInput#MAX_DISCARD_BYTES}) is read and
   * dropped before {@code done} gets the refusal.
   */
  static void read(Request request, long timeoutMillis, ApiError refusal, BiConsumer<byte[], ApiError> done) {
    RequestBody body = new RequestBody(request, timeoutMillis, refusal, done);
    body.deadline = request.getComponents().getScheduler().schedule(body::expire, timeoutMillis, TimeUnit.MILLISECONDS);
    body.run();
  }

  /** Reads what has arrived; asks to be called again when more does (Jetty calls it on a request thread). */
  @Override public void run() {
    while (!finished.get()) {
      Content.Chunk chunk = request.read();
      if (chunk == null) {
        request.demand(this);
        return;
      }
      if (Content.Chunk.isFailure(chunk)) {
        Throwable failure = chunk.getFailure();
        finish(null, failure instanceof TimeoutException ? timedOut() : new ApiError(400, "bad_request", "request body ended after "
            + of() + " bytes; send the whole body", true));
        return;
      }
      ByteBuffer b = chunk.getByteBuffer();
      int n = b.remaining();
      received += n;
      if (refusal == null && size + n > JsonInput.MAX_BODY_BYTES) {
        refusal = new ApiError(413, "payload_too_large", "request body exceeds " + JsonInput.MAX_BODY_BYTES + " bytes");
      }
      if (refusal == null) {
        if (size + n > bytes.length) {
          bytes = Arrays.copyOf(bytes, Math.max(size + n, Math.min(2 * bytes.length, JsonInput.MAX_BODY_BYTES)));
        }
        b.get(bytes, size, n);
        size += n;
      }
      boolean last = chunk.isLast();
      chunk.release();
      if (refusal != null && received > JsonInput.MAX_DISCARD_BYTES) {
        finish(null, refusal.closing()); // enough read and dropped: answer, and close rather than read on
        return;
      }
      if (last) {
        finish(refusal == null ? Arrays.copyOf(bytes, size) : null, refusal);
        return;
      }
    }
  }

  private void expire() {
    finish(null, timedOut());
  }

  private ApiError timedOut() {
    return new ApiError(408, "request_timeout", "request body incomplete after " + timeoutMillis + " ms: " + of()
        + " bytes arrived; send the whole body within --body-timeout", true);
  }

  private String of() {
    return declared >= 0 ? received + " of " + declared : Long.toString(received);
  }

  private void finish(byte[] body, ApiError error) {
    if (finished.compareAndSet(false, true)) {
      Scheduler.Task d = deadline;
      if (d != null) {
        d.cancel();
      }
      done.accept(body, error);
    }
  }
}
