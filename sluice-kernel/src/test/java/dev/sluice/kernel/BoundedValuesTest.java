package dev.sluice.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

class BoundedValuesTest {
  @Test void theFirstValuesKeepTheirSeriesAndEveryLaterOneIsOther() {
    BoundedValues v = new BoundedValues(2);
    assertThat(v.bound("free")).isEqualTo("free");
    assertThat(v.bound("pro")).isEqualTo("pro");
    assertThat(v.bound("enterprise")).isEqualTo(BoundedValues.OTHER);
    assertThat(v.bound("free")).as("kept for good").isEqualTo("free");
    assertThat(v.distinct()).isEqualTo(2);
  }

  @Test void theCapIsExactUnder16ThreadsAndManyDistinctValues() throws Exception {
    BoundedValues v = new BoundedValues(50);
    Set<String> shown = ConcurrentHashMap.newKeySet();
    CountDownLatch go = new CountDownLatch(1);
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 16; t++) {
      int base = t;
      Thread th = new Thread(() -> {
        try {
          go.await();
        } catch (InterruptedException e) {
          return;
        }
        for (int i = 0; i < 10_000; i++) {
          shown.add(v.bound("v" + (i * 16 + base) % 3_000));
        }
      });
      th.start();
      threads.add(th);
    }
    go.countDown();
    for (Thread th : threads) {
      th.join();
    }
    assertThat(v.distinct()).isEqualTo(50);
    assertThat(shown).hasSize(51).contains(BoundedValues.OTHER);
  }

  @Test void aCapBelowOneIsRefused() {
    assertThatThrownBy(() -> new BoundedValues(0)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("a cap of 0 distinct values is below 1");
  }
}
