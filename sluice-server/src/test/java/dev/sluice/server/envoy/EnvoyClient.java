package dev.sluice.server.envoy;

import com.google.protobuf.UInt64Value;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
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

  @Override public void close() {
    channel.shutdownNow();
    try {
      channel.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
