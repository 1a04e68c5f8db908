package dev.sluice.http;

import java.util.ArrayList;
import java.util.List;

/**
 * The proxies whose forwarding headers a {@link KeyResolver} may believe: IP addresses and CIDR
 * blocks, IPv4 and IPv6 (an IPv4-mapped IPv6 address matches its IPv4 form). Immutable.
 *
 * <pre>{@code TrustedProxies proxies = TrustedProxies.of("10.0.0.0/8", "127.0.0.1", "fd00::/8");}</pre>
 */
public final class TrustedProxies {
  private static final TrustedProxies NONE = new TrustedProxies(List.of(), List.of());

  private final byte[][] networks;
  private final int[] prefixes;
  private final List<String> blocks;

  private TrustedProxies(List<byte[]> networks, List<Integer> prefixes) {
    this.networks = networks.toArray(new byte[0][]);
    this.prefixes = prefixes.stream().mapToInt(Integer::intValue).toArray();
    List<String> text = new ArrayList<>();
    for (int i = 0; i < this.networks.length; i++) {
      text.add(IpLiteral.format(this.networks[i]) + "/" + this.prefixes[i]);
    }
    this.blocks = List.copyOf(text);
  }

  /** Trusts nobody: forwarding headers are never believed. */
  public static TrustedProxies none() {
    return NONE;
  }

  /**
   * Trusts the given addresses and CIDR blocks ({@code 10.0.0.0/8}, {@code 192.168.1.7},
   * {@code ::1}, {@code fd00::/8}). Throws {@link IllegalArgumentException} for anything else; host
   * names are refused (trust must not depend on DNS).
   */
  public static TrustedProxies of(String... cidrs) {
    if (cidrs == null) {
      throw new IllegalArgumentException("trusted proxies is null; pass CIDR blocks such as \"10.0.0.0/8\"");
    }
    return of(List.of(cidrs));
  }

  /** {@link #of(String...)} over a list. */
  public static TrustedProxies of(List<String> cidrs) {
    List<byte[]> nets = new ArrayList<>();
    List<Integer> prefixes = new ArrayList<>();
    for (String cidr : cidrs) {
      if (cidr == null) {
        throw new IllegalArgumentException("trusted proxy is null; pass CIDR blocks such as \"10.0.0.0/8\"");
      }
      String text = cidr.trim();
      int slash = text.indexOf('/');
      byte[] net = IpLiteral.parse(slash < 0 ? text : text.substring(0, slash));
      if (net == null) {
        throw bad(cidr);
      }
      int bits = net.length * 8;
      int prefix = bits;
      if (slash >= 0) {
        try {
          prefix = Integer.parseInt(text.substring(slash + 1));
        } catch (NumberFormatException e) {
          throw bad(cidr);
        }
        if (prefix < 0 || prefix > bits) {
          throw new IllegalArgumentException("trusted proxy \"" + cidr + "\" has prefix length " + prefix
              + "; it must be between 0 and " + bits + " for an IPv" + (bits == 32 ? 4 : 6) + " block");
        }
      }
      nets.add(mask(net, prefix));
      prefixes.add(prefix);
    }
    return new TrustedProxies(nets, prefixes);
  }

  private static IllegalArgumentException bad(String cidr) {
    return new IllegalArgumentException("trusted proxy \"" + cidr
        + "\" is not an IP address or CIDR block; use a literal such as \"10.0.0.0/8\", \"192.168.1.7\" or \"fd00::/8\" (host names are not accepted)");
  }

  private static byte[] mask(byte[] a, int prefix) {
    byte[] out = a.clone();
    for (int i = 0; i < out.length; i++) {
      int keep = Math.max(0, Math.min(8, prefix - i * 8));
      out[i] = (byte) (out[i] & (0xff << (8 - keep)));
    }
    return out;
  }

  /** True when {@code address} (an IP literal) lies in one of the trusted blocks. */
  public boolean contains(String address) {
    byte[] a = IpLiteral.parse(address);
    return a != null && contains(a);
  }

  boolean contains(byte[] a) {
    for (int i = 0; i < networks.length; i++) {
      byte[] net = networks[i];
      if (net.length != a.length) {
        continue;
      }
      int prefix = prefixes[i];
      boolean match = true;
      for (int b = 0; b < net.length && b * 8 < prefix; b++) {
        int keep = Math.min(8, prefix - b * 8);
        int m = (0xff << (8 - keep)) & 0xff;
        if ((a[b] & m) != (net[b] & 0xff)) {
          match = false;
          break;
        }
      }
      if (match) {
        return true;
      }
    }
    return false;
  }

  /** The trusted blocks in canonical form, e.g. {@code 10.0.0.0/8}. */
  public List<String> blocks() {
    return blocks;
  }

  @Override public String toString() {
    return "TrustedProxies" + blocks;
  }
}
