package dev.sluice.hazelcast;

import dev.sluice.Algorithm;
import dev.sluice.Algorithm.FixedWindow;
import dev.sluice.Algorithm.Gcra;
import dev.sluice.Algorithm.SlidingWindow;
import dev.sluice.Algorithm.TokenBucket;

/**
 * An algorithm as the entry processor carries it to the member: a kind and the record's three
 * numbers, rebuilt there into the same record (its constructor validates them again). The math stays
 * the core's {@code ReferenceModel}; this is only its parameters on the wire.
 */
final class Wire {
  static final int FIXED_WINDOW = 1;
  static final int SLIDING_WINDOW = 2;
  static final int TOKEN_BUCKET = 3;
  static final int GCRA = 4;

  private Wire() {}

  /** The kind of {@code a}, one of the algorithms a fixed-size entry holds (the capabilities refuse the others). */
  static int kind(Algorithm a) {
    if (a instanceof FixedWindow) {
      return FIXED_WINDOW;
    } else if (a instanceof SlidingWindow) {
      return SLIDING_WINDOW;
    } else if (a instanceof TokenBucket) {
      return TOKEN_BUCKET;
    } else if (a instanceof Gcra) {
      return GCRA;
    }
    throw new IllegalArgumentException("the Hazelcast backend does not run " + a.id()); // refused by its capabilities first
  }

  /** The record's numbers in its components' order. */
  static long[] numbers(Algorithm a) {
    if (a instanceof FixedWindow fw) {
      return new long[] {fw.limit(), fw.windowMicros(), 0};
    } else if (a instanceof SlidingWindow sw) {
      return new long[] {sw.limit(), sw.windowMicros(), 0};
    } else if (a instanceof TokenBucket tb) {
      return new long[] {tb.capacity(), tb.refillTokens(), tb.refillPeriodMicros()};
    } else if (a instanceof Gcra g) {
      return new long[] {g.rate(), g.periodMicros(), g.burst()};
    }
    throw new IllegalArgumentException("the Hazelcast backend does not run " + a.id());
  }

  /** The record {@link #kind} and {@link #numbers} describe. */
  static Algorithm algorithm(int kind, long n0, long n1, long n2) {
    return switch (kind) {
      case FIXED_WINDOW -> new FixedWindow(n0, n1);
      case SLIDING_WINDOW -> new SlidingWindow(n0, n1);
      case TOKEN_BUCKET -> new TokenBucket(n0, n1, n2);
      case GCRA -> new Gcra(n0, n1, n2);
      default -> throw new IllegalArgumentException("unknown algorithm kind " + kind);
    };
  }
}
