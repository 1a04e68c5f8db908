/**
 * Sluice for gRPC: a grpc-java {@code ServerInterceptor} that limits calls per method or service over
 * any Sluice limiter, refuses with {@code RESOURCE_EXHAUSTED} and a {@code google.rpc.RetryInfo}
 * detail, and decides on an async store without holding a transport thread.
 */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"}) // grpc-java and protobuf ship no module descriptor
module dev.sluice.grpc {
  requires transitive dev.sluice.core;
  // HttpVerdict's status rule and limit fields, RateLimitHeaders, KeyResolver: the rendering every front end shares.
  requires transitive dev.sluice.http;
  requires transitive io.grpc;
  requires io.grpc.protobuf;
  requires com.google.protobuf;
  // proto-google-common-protos (google.rpc.Status, RetryInfo) names no module: this is its file-name module.
  requires proto.google.common.protos;

  exports dev.sluice.grpc;
}
