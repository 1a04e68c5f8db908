package dev.sluice.grpc;

import io.grpc.Attributes;
import io.grpc.MethodDescriptor;
import io.grpc.Metadata;

/**
 * Who a call counts against, from what a server interceptor sees of it: the method, the request
 * metadata and the transport's attributes ({@code Grpc.TRANSPORT_ATTR_REMOTE_ADDR}, the TLS session).
 * Returns the key, or null when the call has none (then the shared key {@code unknown} is charged, as
 * the HTTP filters do). Runs on the transport's call thread: keep it to reading what it is given.
 * Give your keys a source of their own ({@code "tenant:" + id}) so that they cannot meet the built-in
 * ones ({@code ip:}, {@code header:<name>:}).
 */
@FunctionalInterface
public interface GrpcKeyResolver {
  /** The key of a call, or null for none. */
  String key(MethodDescriptor<?, ?> method, Metadata headers, Attributes attributes);
}
