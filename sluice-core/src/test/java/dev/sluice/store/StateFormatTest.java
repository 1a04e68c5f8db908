package dev.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Algorithm;
import dev.sluice.Policy;
import dev.sluice.internal.Checks;
import java.time.Duration;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The stored text round-trips every state the model can write and rejects near misses. */
class StateFormatTest {
  static final List<Algorithm> ALGS = List.of(
      Policy.fixedWindow("a", 5, Duration.ofSeconds(1)).algorithm(),
      Policy.slidingWindow("b", 5, Duration.ofSeconds(1)).algorithm(),
      Policy.tokenBucket("c", 5, 1, Duration.ofSeconds(1)).algorithm(),
      Policy.gcra("d", 5, Duration.ofSeconds(1), 5).algorithm());

  @Test
  void everyWellFormedStateRoundTripsAndAnyOtherAlgorithmSeesItAsForeign() {
    SplittableRandom rnd = new SplittableRandom(7);
    long[] st = new long[3];
    long[] meta = new long[1];
    for (int i = 0; i < 20_000; i++) {
      Algorithm alg = ALGS.get(i % ALGS.size());
      boolean sliding = alg instanceof Algorithm.SlidingWindow;
      long[] in = {
          i % 97 == 0 && sliding ? 0 : 1 + rnd.nextLong(Checks.MAX_EXACT),
          i % 13 == 0 ? Checks.MAX_EXACT : rnd.nextLong(Checks.MAX_EXACT + 1),
          sliding ? rnd.nextLong(Checks.MAX_EXACT + 1) : 0};
      long written = 1 + rnd.nextLong(Checks.MAX_EXACT);
      String text = StateFormat.encode(alg, in, written);
      assertThat(text.length()).isLessThanOrEqualTo(StateFormat.MAX_LENGTH);
      assertThat(StateFormat.decode(alg, text, st, meta)).as(text).isEqualTo(StateFormat.OK);
      assertThat(st).containsExactly(in);
      assertThat(meta[0]).isEqualTo(written);
      Algorithm other = ALGS.get((i + 1) % ALGS.size());
      int kind = StateFormat.decode(other, text, st, meta);
      assertThat(kind).isEqualTo(StateFormat.FOREIGN);
      // Any single character changed to a digit-breaking one makes it malformed.
      int at = rnd.nextInt(text.length());
      String broken = text.substring(0, at) + (text.charAt(at) == 'x' ? 'y' : 'x') + text.substring(at + 1);
      assertThat(StateFormat.decode(alg, broken, st, meta)).as(broken).isEqualTo(StateFormat.MALFORMED);
    }
  }

  @Test
  void theLongestValueFitsTheDeclaredBoundAndTheStoreLimit() {
    long max = Checks.MAX_EXACT;
    String longest = StateFormat.encode(ALGS.get(1), new long[] {max, max, max}, max);
    assertThat(longest).hasSize(StateFormat.MAX_LENGTH);
    assertThat(StateFormat.MAX_LENGTH).isLessThanOrEqualTo(dev.sluice.spi.VersionedStore.MAX_VALUE_LENGTH);
    assertThat(StateFormat.decode(ALGS.get(1), longest + "0", new long[3], new long[1])).isEqualTo(StateFormat.MALFORMED);
    assertThat(StateFormat.decode(ALGS.get(1), null, new long[3], new long[1])).isEqualTo(StateFormat.MALFORMED);
  }
}
