package dev.sluice.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.Any;
import com.google.rpc.RetryInfo;
import dev.sluice.Decision;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.http.HttpVerdict;
import dev.sluice.http.RateLimitHeaders;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Every reason maps to the gRPC code of its HTTP status; the detail and metadata are the HTTP verdict's. */
class GrpcVerdictTest {
  private static final Policy API = Policy.fixedWindow("api", 10, Duration.ofMinutes(1));
  private static final long NOW = 1_700_000_000_000_000L;

  private static Decision refused(Reason reason, Path path, long retryMicros) {
    return Decision.builder(API).refused(reason).path(path).remaining(0).resetAtMicros(NOW + 60_000_000L)
        .retryAfterMicros(retryMicros).build();
  }

  @Test void eachReasonIsTheCodeOfItsHttpStatus() {
    for (Reason r : Reason.values()) {
      if (r == Reason.WITHIN_LIMIT) {
        continue;
      }
      Decision d = refused(r, r.isFailure() ? Path.FAILURE_MODE : Path.PRIMARY, 1_500_000);
      GrpcVerdict v = GrpcVerdict.of(d, "k", NOW, RateLimitHeaders.all());
      Status.Code expected = HttpVerdict.status(d) == HttpVerdict.SERVICE_UNAVAILABLE ? Status.Code.UNAVAILABLE : Status.Code.RESOURCE_EXHAUSTED;
      assertThat(v.status().getCode()).as(r.name()).isEqualTo(expected);
      assertThat(v.allowed()).isFalse();
    }
    assertThat(GrpcVerdict.of(refused(Reason.CONTENTION, Path.PRIMARY, 5), null, NOW, RateLimitHeaders.all()).status().getCode())
        .as("contention is load, not an outage").isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(GrpcVerdict.of(refused(Reason.TIMEOUT, Path.FAILURE_MODE, 5), null, NOW, RateLimitHeaders.all()).status().getCode())
        .isEqualTo(Status.Code.UNAVAILABLE);
  }

  @Test void theRetryInfoIsTheExactWaitAndTheMetadataAreTheHttpHeaders() throws Exception {
    Decision d = refused(Reason.LIMIT_EXCEEDED, Path.PRIMARY, 2_345_678);
    GrpcVerdict v = GrpcVerdict.of(d, "k", NOW, RateLimitHeaders.all());
    StatusRuntimeException e = v.toException();
    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(e.getStatus().getDescription()).isEqualTo(v.http().detail());
    com.google.rpc.Status detail = StatusProto.fromThrowable(e);
    assertThat(detail).isEqualTo(v.detail());
    Any only = detail.getDetails(0);
    assertThat(detail.getDetailsCount()).isEqualTo(1);
    com.google.protobuf.Duration wait = only.unpack(RetryInfo.class).getRetryDelay();
    assertThat(Duration.ofSeconds(wait.getSeconds(), wait.getNanos())).isEqualTo(Duration.ofNanos(2_345_678_000L));
    Metadata m = v.metadata();
    for (HttpVerdict.Header h : v.http().headers()) {
      assertThat(m.get(Metadata.Key.of(h.name(), Metadata.ASCII_STRING_MARSHALLER))).as(h.name()).isEqualTo(h.value());
      assertThat(e.getTrailers().get(Metadata.Key.of(h.name(), Metadata.ASCII_STRING_MARSHALLER))).isEqualTo(h.value());
    }
    assertThat(m.get(Metadata.Key.of("retry-after", Metadata.ASCII_STRING_MARSHALLER))).isEqualTo("3");
  }

  @Test void anAllowedVerdictIsOkWithNoDetailAndIsNoException() {
    Decision d = Decision.allowed(API, 9, NOW + 60_000_000L, null);
    GrpcVerdict v = GrpcVerdict.of(d, "k", NOW, RateLimitHeaders.of(true, false));
    assertThat(v.allowed()).isTrue();
    assertThat(v.status().isOk()).isTrue();
    assertThat(v.detail()).isNull();
    assertThat(v.metadata().keys()).containsExactlyInAnyOrder("ratelimit-policy", "ratelimit");
    assertThatThrownBy(v::toException).isInstanceOf(IllegalStateException.class).hasMessageContaining("allows the call");
  }
}
