package dev.sluice.grpc;

import com.google.protobuf.Any;
import com.google.rpc.RetryInfo;
import dev.sluice.Decision;
import dev.sluice.http.HttpVerdict;
import dev.sluice.http.RateLimitHeaders;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.util.Objects;

/**
 * What a gRPC client is told about a {@link Decision}: a status and the decision's limit fields as
 * metadata. It is {@link HttpVerdict} spoken in gRPC, so the HTTP filters, the service and the
 * interceptor never disagree about the same decision:
 *
 * <table>
 *   <caption>Status per decision</caption>
 *   <tr><th>decision</th><th>HTTP</th><th>gRPC</th><th>details</th></tr>
 *   <tr><td>allowed</td><td>200</td><td>the call proceeds</td><td>-</td></tr>
 *   <tr><td>refused for load ({@code LIMIT_EXCEEDED}, {@code KEY_TABLE_FULL}, {@code CONTENTION})</td>
 *       <td>429</td><td>{@code RESOURCE_EXHAUSTED}</td><td>{@code google.rpc.RetryInfo}</td></tr>
 *   <tr><td>refused because the limiter could not decide (the closed failure mode: store down, timeout,
 *       corrupt state, invalid clock)</td><td>503</td><td>{@code UNAVAILABLE}</td>
 *       <td>{@code google.rpc.RetryInfo} (the failure mode's wait)</td></tr>
 * </table>
 *
 * <p>A refusal's description is {@link HttpVerdict#detail()}; its {@code google.rpc.Status} detail (code,
 * that message, a {@code RetryInfo} whose {@code retry_delay} is the decision's exact
 * {@link Decision#retryAfter()}, to the microsecond) travels in the {@code grpc-status-details-bin}
 * trailer, as {@link StatusProto} writes it; a client reads it with {@code StatusProto.fromThrowable}.
 *
 * <p>The metadata are {@link HttpVerdict#headers()} under their names in lower case (gRPC metadata
 * keys are): {@code ratelimit-policy} and {@code ratelimit} (the IETF draft), {@code x-ratelimit-limit},
 * {@code x-ratelimit-remaining}, {@code x-ratelimit-reset} (the families chosen), and {@code retry-after}
 * (whole seconds, rounded up) on a refusal. An outage carries no limit fields, as a 503 carries no limit
 * headers. Immutable.
 */
public final class GrpcVerdict {
  private final HttpVerdict http;
  private final Status status;
  private final com.google.rpc.Status detail;

  private GrpcVerdict(HttpVerdict http, Status status, com.google.rpc.Status detail) {
    this.http = http;
    this.status = status;
    this.detail = detail;
  }

  /**
   * The verdict on {@code decision} for the client's {@code key} (named by the partition key when the
   * families ask for it; null for none); {@code nowMicros} is the limiter's clock.
   */
  public static GrpcVerdict of(Decision decision, String key, long nowMicros, RateLimitHeaders families) {
    Objects.requireNonNull(decision, "decision");
    Objects.requireNonNull(families, "families");
    HttpVerdict http = HttpVerdict.of(decision, null, key, nowMicros, families);
    if (http.allowed()) {
      return new GrpcVerdict(http, Status.OK, null);
    }
    Status.Code code = http.status() == HttpVerdict.SERVICE_UNAVAILABLE ? Status.Code.UNAVAILABLE : Status.Code.RESOURCE_EXHAUSTED;
    long micros = decision.retryAfterMicros();
    RetryInfo retry = RetryInfo.newBuilder().setRetryDelay(com.google.protobuf.Duration.newBuilder()
        .setSeconds(micros / 1_000_000L).setNanos((int) (micros % 1_000_000L) * 1_000)).build();
    com.google.rpc.Status detail = com.google.rpc.Status.newBuilder().setCode(code.value()).setMessage(http.detail())
        .addDetails(Any.pack(retry)).build();
    return new GrpcVerdict(http, Status.fromCode(code).withDescription(http.detail()), detail);
  }

  /** True when the call may proceed. */
  public boolean allowed() {
    return http.allowed();
  }

  /** {@code OK} when allowed, else {@code RESOURCE_EXHAUSTED} or {@code UNAVAILABLE} with the refusal's description. */
  public Status status() {
    return status;
  }

  /** The {@code google.rpc.Status} of a refusal (its code, message and {@code RetryInfo}); null when allowed. */
  public com.google.rpc.Status detail() {
    return detail;
  }

  /** The HTTP verdict on the same decision, whose headers and fields these are. */
  public HttpVerdict http() {
    return http;
  }

  /** A fresh copy of the limit fields as metadata (see the class comment). */
  public Metadata metadata() {
    Metadata m = new Metadata();
    for (HttpVerdict.Header h : http.headers()) {
      m.put(Metadata.Key.of(h.name(), Metadata.ASCII_STRING_MARSHALLER), h.value());
    }
    return m;
  }

  /**
   * The refusal as an exception whose trailers hold {@link #metadata()} and the {@code google.rpc.Status}
   * detail, for {@code call.close(e.getStatus(), e.getTrailers())} or a handler's
   * {@code responseObserver.onError(e)}.
   *
   * @throws IllegalStateException when the verdict allows the call
   */
  public StatusRuntimeException toException() {
    if (detail == null) {
      throw new IllegalStateException("the verdict allows the call; only a refusal is an exception");
    }
    return StatusProto.toStatusRuntimeException(detail, metadata());
  }

  @Override public String toString() {
    return "GrpcVerdict[" + status.getCode() + ", " + http.headers() + "]";
  }
}
