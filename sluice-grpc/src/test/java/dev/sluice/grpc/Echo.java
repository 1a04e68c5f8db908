package dev.sluice.grpc;

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
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.ServerCalls;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A tiny service without protoc (strings as messages), on a real Netty server on loopback and a real
 * channel to it: {@code test.Echo/Say} (unary: {@code fail:CODE} answers that status, {@code throw}
 * throws), {@code test.Echo/Count} (server streaming: three messages), {@code test.Other/Free} (unary).
 */
final class Echo implements AutoCloseable {
  static final MethodDescriptor.Marshaller<String> UTF8 = new MethodDescriptor.Marshaller<>() {
    @Override public InputStream stream(String value) {
      return new ByteArrayInputStream(value.getBytes(StandardCharsets.UTF_8));
    }

    @Override public String parse(InputStream stream) {
      try {
        return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  };

  static final MethodDescriptor<String, String> SAY = method("test.Echo/Say", MethodDescriptor.MethodType.UNARY);
  static final MethodDescriptor<String, String> COUNT = method("test.Echo/Count", MethodDescriptor.MethodType.SERVER_STREAMING);
  static final MethodDescriptor<String, String> FREE = method("test.Other/Free", MethodDescriptor.MethodType.UNARY);

  /** The threads the calls were started on (the handlers' startCall, behind the limits), in order. */
  final List<Thread> startThreads = java.util.Collections.synchronizedList(new ArrayList<>());
  /** The threads the handlers ran on, in order. */
  final List<Thread> handlerThreads = java.util.Collections.synchronizedList(new ArrayList<>());
  final Server server;
  final ManagedChannel channel;
  final AtomicReference<Metadata> headers = new AtomicReference<>();
  final AtomicReference<Metadata> trailers = new AtomicReference<>();

  private static MethodDescriptor<String, String> method(String name, MethodDescriptor.MethodType type) {
    return MethodDescriptor.<String, String>newBuilder().setFullMethodName(name).setType(type)
        .setRequestMarshaller(UTF8).setResponseMarshaller(UTF8).build();
  }

  Echo(ServerInterceptor limits) throws IOException {
    this(limits, false);
  }

  /** {@code direct}: handlers (and interceptors) run on the transport's event loop, one thread for the server. */
  Echo(ServerInterceptor limits, boolean direct) throws IOException {
    NettyServerBuilder b = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0), InsecureServerCredentials.create())
        .addService(ServerInterceptors.intercept(echo(), recorder(), limits))
        .addService(ServerInterceptors.intercept(other(), recorder(), limits));
    if (direct) {
      b.directExecutor();
    }
    server = b.build().start();
    channel = Grpc.newChannelBuilderForAddress("127.0.0.1", server.getPort(), InsecureChannelCredentials.create()).build();
  }

  /** Behind the limits (the last interceptor is called first): where each call starts. */
  private ServerInterceptor recorder() {
    return new ServerInterceptor() {
      @Override public <Q, R> io.grpc.ServerCall.Listener<Q> interceptCall(io.grpc.ServerCall<Q, R> call, Metadata headers,
                                                                           io.grpc.ServerCallHandler<Q, R> next) {
        startThreads.add(Thread.currentThread());
        return next.startCall(call, headers);
      }
    };
  }

  private ServerServiceDefinition echo() {
    return ServerServiceDefinition.builder("test.Echo")
        .addMethod(SAY, ServerCalls.asyncUnaryCall((String req, io.grpc.stub.StreamObserver<String> out) -> {
          handlerThreads.add(Thread.currentThread());
          if (req.startsWith("fail:")) {
            out.onError(Status.fromCode(Status.Code.valueOf(req.substring(5))).asRuntimeException());
            return;
          }
          if (req.equals("throw")) {
            throw new IllegalStateException("the handler failed");
          }
          out.onNext("hi " + req);
          out.onCompleted();
        }))
        .addMethod(COUNT, ServerCalls.asyncServerStreamingCall((String req, io.grpc.stub.StreamObserver<String> out) -> {
          handlerThreads.add(Thread.currentThread());
          for (int i = 1; i <= 3; i++) {
            out.onNext(req + i);
          }
          out.onCompleted();
        }))
        .build();
  }

  private ServerServiceDefinition other() {
    return ServerServiceDefinition.builder("test.Other")
        .addMethod(FREE, ServerCalls.asyncUnaryCall((String req, io.grpc.stub.StreamObserver<String> out) -> {
          handlerThreads.add(Thread.currentThread());
          out.onNext("free " + req);
          out.onCompleted();
        }))
        .build();
  }

  /** A channel that sends {@code extra} with every call and captures the last call's headers and trailers. */
  Channel channel(Metadata extra) {
    return ClientInterceptors.intercept(channel, MetadataUtils.newAttachHeadersInterceptor(extra),
        MetadataUtils.newCaptureMetadataInterceptor(headers, trailers));
  }

  Channel capturing() {
    return channel(new Metadata());
  }

  String say(String what) {
    return ClientCalls.blockingUnaryCall(capturing(), SAY, CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS), what);
  }

  String say(Metadata extra, String what) {
    return ClientCalls.blockingUnaryCall(channel(extra), SAY, CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS), what);
  }

  List<String> count(String what) {
    Iterator<String> it = ClientCalls.blockingServerStreamingCall(capturing(), COUNT,
        CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS), what);
    List<String> out = new ArrayList<>();
    it.forEachRemaining(out::add);
    return out;
  }

  String free(String what) {
    return ClientCalls.blockingUnaryCall(capturing(), FREE, CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS), what);
  }

  static Metadata header(String name, String value) {
    Metadata m = new Metadata();
    m.put(Metadata.Key.of(name, Metadata.ASCII_STRING_MARSHALLER), value);
    return m;
  }

  static String get(Metadata m, String name) {
    return m == null ? null : m.get(Metadata.Key.of(name, Metadata.ASCII_STRING_MARSHALLER));
  }

  @Override public void close() throws InterruptedException {
    channel.shutdownNow();
    server.shutdownNow();
    channel.awaitTermination(5, TimeUnit.SECONDS);
    server.awaitTermination(5, TimeUnit.SECONDS);
  }

}
