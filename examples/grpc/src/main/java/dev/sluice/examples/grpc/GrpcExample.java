package dev.sluice.examples.grpc;

import com.google.protobuf.Any;
import com.google.protobuf.StringValue;
import com.google.rpc.RetryInfo;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.grpc.RateLimitInterceptor;
import dev.sluice.memory.MemoryRateLimiter;
import dev.sluice.redis.RedisRateLimiter;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.InsecureServerCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.protobuf.StatusProto;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.ServerCalls;
import io.lettuce.core.RedisClient;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A gRPC service ({@code demo.Greeter/Hello}, {@code google.protobuf.StringValue} in and out, so that no protoc is needed) behind
 * {@link RateLimitInterceptor}: three calls per 5 seconds per {@code x-api-key}. With no argument it
 * also runs a client that is refused, reads the {@code RetryInfo} detail, waits exactly that long and
 * is admitted; {@code serve} keeps the server up. {@code REDIS_URL} keeps the budgets in Redis.
 */
public final class GrpcExample {
  /** The well-known {@code google.protobuf.StringValue} as request and reply: protobuf, with no .proto of our own. */
  static final MethodDescriptor<StringValue, StringValue> HELLO = MethodDescriptor.<StringValue, StringValue>newBuilder()
      .setFullMethodName("demo.Greeter/Hello").setType(MethodDescriptor.MethodType.UNARY)
      .setRequestMarshaller(ProtoUtils.marshaller(StringValue.getDefaultInstance()))
      .setResponseMarshaller(ProtoUtils.marshaller(StringValue.getDefaultInstance())).build();

  private GrpcExample() {}

  public static void main(String[] args) throws Exception {
    boolean serve = args.length > 0 && args[0].equals("serve");
    Policy policy = Policy.fixedWindow("greeter", 3, Duration.ofSeconds(5));
    String redisUrl = System.getenv("REDIS_URL");
    RedisClient redis = redisUrl == null ? null : RedisClient.create(redisUrl);
    RateLimiter limiter = redis == null ? MemoryRateLimiter.builder(policy).build()
        : RedisRateLimiter.builder(policy, redis).timeout(Duration.ofMillis(250)).build();

    RateLimitInterceptor limits = RateLimitInterceptor.builder()
        .limit("demo.Greeter/*", limiter)
        .keyFromHeader("x-api-key")                                 // no header: the shared key "unknown"
        .refundOn(Status.Code.INTERNAL, Status.Code.UNAVAILABLE)   // a failed call does not count
        .build();
    ServerServiceDefinition greeter = ServerServiceDefinition.builder("demo.Greeter")
        .addMethod(HELLO, ServerCalls.asyncUnaryCall((StringValue name, io.grpc.stub.StreamObserver<StringValue> out) -> {
          out.onNext(StringValue.of("Hello, " + name.getValue()));
          out.onCompleted();
        }))
        .build();
    int port = serve ? Integer.parseInt(System.getenv().getOrDefault("PORT", "50051")) : 0;
    Server server = Grpc.newServerBuilderForPort(port, InsecureServerCredentials.create())
        .addService(ServerInterceptors.intercept(greeter, limits)).build().start();
    System.out.println("demo.Greeter/Hello on port " + server.getPort() + ", 3 calls per 5 s per x-api-key, on "
        + (redis == null ? "memory" : "Redis " + redisUrl));
    try {
      if (serve) {
        server.awaitTermination();
      } else {
        client(server.getPort());
      }
    } finally {
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      if (limiter instanceof AutoCloseable c) {
        c.close();
      }
      if (redis != null) {
        redis.shutdown();
      }
    }
  }

  /** Calls until refused, waits the RetryInfo delay, calls again. */
  private static void client(int port) throws InterruptedException {
    ManagedChannel channel = Grpc.newChannelBuilderForAddress("127.0.0.1", port, InsecureChannelCredentials.create()).build();
    Metadata key = new Metadata();
    key.put(Metadata.Key.of("x-api-key", Metadata.ASCII_STRING_MARSHALLER), "demo-client");
    AtomicReference<Metadata> headers = new AtomicReference<>();
    AtomicReference<Metadata> trailers = new AtomicReference<>();
    Channel ch = ClientInterceptors.intercept(channel, MetadataUtils.newAttachHeadersInterceptor(key),
        MetadataUtils.newCaptureMetadataInterceptor(headers, trailers));
    try {
      for (int i = 1; i <= 5; i++) {
        try {
          String reply = hello(ch, "call " + i);
          System.out.println(reply + "    ratelimit: " + headers.get().get(Metadata.Key.of("ratelimit", Metadata.ASCII_STRING_MARSHALLER)));
        } catch (StatusRuntimeException refused) {
          Duration wait = retryDelay(refused);
          System.out.println("call " + i + ": " + refused.getStatus().getCode() + " (" + refused.getStatus().getDescription()
              + ")    RetryInfo: " + wait);
          if (wait == null) {
            return;
          }
          Thread.sleep(wait.toMillis() + (wait.toNanosPart() % 1_000_000 == 0 ? 0 : 1)); // as told, never early
          String reply = hello(ch, "after waiting");
          System.out.println(reply + "    (admitted after waiting " + wait + ")");
          return;
        }
      }
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  private static String hello(Channel ch, String name) {
    return ClientCalls.blockingUnaryCall(ch, HELLO, CallOptions.DEFAULT.withDeadlineAfter(5, TimeUnit.SECONDS), StringValue.of(name)).getValue();
  }

  /** The RetryInfo delay in the refusal's google.rpc.Status detail, or null. */
  static Duration retryDelay(StatusRuntimeException e) {
    com.google.rpc.Status status = StatusProto.fromThrowable(e);
    if (status == null) {
      return null;
    }
    for (Any detail : status.getDetailsList()) {
      if (detail.is(RetryInfo.class)) {
        try {
          com.google.protobuf.Duration d = detail.unpack(RetryInfo.class).getRetryDelay();
          return Duration.ofSeconds(d.getSeconds(), d.getNanos());
        } catch (com.google.protobuf.InvalidProtocolBufferException malformed) {
          return null;
        }
      }
    }
    return null;
  }
}
