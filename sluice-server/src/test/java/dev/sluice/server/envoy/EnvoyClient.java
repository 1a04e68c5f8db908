package dev.sluice.server.envoy;

import com.google.protobuf.UInt64Value;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.concurrent.TimeUnit;

/** A real gRPC client of the published Envoy stubs, over a plaintext channel to a running server. */
public final class EnvoyClient implements AutoCloseable {
  public final ManagedChannel channel;
  public final RateLimitServiceGrpc.RateLimitServiceBlockingStub stub;

  public EnvoyClient(int port) {
    channel = NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
    stub = RateLimitServiceGrpc.newBlockingStub(channel);
  }

  /** A descriptor of key/value pairs: {@code d("database", "users")}. */
  public static RateLimitDescriptor.Builder d(String... kv) {
    RateLimitDescriptor.Builder b = RateLimitDescriptor.newBuilder();
    for (int i = 0; i < kv.length; i += 2) {
      b.addEntries(RateLimitDescriptor.Entry.newBuilder().setKey(kv[i]).setValue(kv[i + 1]));
    }
    return b;
  }

  public static RateLimitDescriptor.Builder hits(RateLimitDescriptor.Builder d, long hits) {
    return d.setHitsAddend(UInt64Value.of(hits));
  }

  public RateLimitResponse ask(String domain, RateLimitDescriptor.Builder... descriptors) {
    return ask(domain, 0, descriptors);
  }

  public RateLimitResponse ask(String domain, int hitsAddend, RateLimitDescriptor.Builder... descriptors) {
    RateLimitRequest.Builder r = RateLimitRequest.newBuilder().setDomain(domain).setHitsAddend(hitsAddend);
    for (RateLimitDescriptor.Builder d : descriptors) {
      r.addDescriptors(d);
    }
    return stub.withDeadlineAfter(10, TimeUnit.SECONDS).shouldRateLimit(r.build());
  }

  /** {@code ShouldRateLimit} with {@code body} as the request's bytes, whatever they are: how a broken client's call arrives. */
  public byte[] askRaw(byte[] body) {
    MethodDescriptor<byte[], byte[]> raw = RateLimitServiceGrpc.getShouldRateLimitMethod().toBuilder(BYTES, BYTES).build();
    return ClientCalls.blockingUnaryCall(channel, raw, CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS), body);
  }

  private static final MethodDescriptor.Marshaller<byte[]> BYTES = new MethodDescriptor.Marshaller<>() {
    @Override public InputStream stream(byte[] value) {
      return new ByteArrayInputStream(value);
    }

    @Override public byte[] parse(InputStream stream) {
      try {
        return stream.readAllBytes();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  };

  @Override public void close() {
    channel.shutdownNow();
    try {
      channel.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
