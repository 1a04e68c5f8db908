package dev.sluice.grpc;

import dev.sluice.http.RequestView;
import io.grpc.Attributes;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.security.Principal;
import java.util.ArrayList;
import java.util.List;

/**
 * A gRPC call as sluice-http's key resolvers read a request, so that {@code KeyResolver.header},
 * {@code clientAddress} and {@code forwardedFor} give a gRPC client the key they give it over HTTP:
 * the peer's address from {@link Grpc#TRANSPORT_ATTR_REMOTE_ADDR}, headers from the ASCII metadata
 * (binary {@code -bin} keys read as absent), the method {@code POST} and the path
 * {@code /pkg.Service/Method}, as on the wire.
 */
final class CallView implements RequestView {
  private final MethodDescriptor<?, ?> method;
  private final Metadata headers;
  private final Attributes attributes;

  CallView(MethodDescriptor<?, ?> method, Metadata headers, Attributes attributes) {
    this.method = method;
    this.headers = headers;
    this.attributes = attributes;
  }

  @Override public String remoteAddress() {
    SocketAddress a = attributes == null ? null : attributes.get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR);
    if (!(a instanceof InetSocketAddress isa) || isa.getAddress() == null) {
      return null; // in-process, a Unix socket, an unresolved name: no address to key on
    }
    String literal = isa.getAddress().getHostAddress();
    int scope = literal.indexOf('%'); // an IPv6 scope id (fe80::1%eth0) is not part of the address
    return scope < 0 ? literal : literal.substring(0, scope);
  }

  @Override public String header(String name) {
    Metadata.Key<String> key = key(name);
    return key == null ? null : headers.get(key);
  }

  @Override public List<String> headers(String name) {
    Metadata.Key<String> key = key(name);
    Iterable<String> all = key == null ? null : headers.getAll(key);
    List<String> out = new ArrayList<>();
    if (all != null) {
      all.forEach(out::add);
    }
    return out;
  }

  private static Metadata.Key<String> key(String name) {
    if (name == null || name.endsWith(Metadata.BINARY_HEADER_SUFFIX)) {
      return null;
    }
    try {
      return Metadata.Key.of(name, Metadata.ASCII_STRING_MARSHALLER);
    } catch (IllegalArgumentException notAMetadataName) {
      return null;
    }
  }

  @Override public Principal principal() {
    return null;
  }

  @Override public String method() {
    return "POST";
  }

  @Override public String path() {
    return "/" + method.getFullMethodName();
  }
}
