package dev.sluice.hazelcast;

import dev.sluice.kernel.Store;
import dev.sluice.kernel.StoreFactory;
import dev.sluice.kernel.StoreOptions;

/**
 * The kernel's store named {@code hazelcast} ({@code StoreFactory.named("hazelcast")}, URL e.g.
 * {@code hazelcast://127.0.0.1:5701/dev}): a client of its own on the options' URL ({@link HazelcastStore#fromUrl}),
 * with the options' failure modes and timeout. Found by {@code ServiceLoader} (this module provides it).
 */
public final class HazelcastStoreFactory implements StoreFactory {
  /** For {@code ServiceLoader}. */
  public HazelcastStoreFactory() {}

  @Override public String name() {
    return "hazelcast";
  }

  @Override public Store open(StoreOptions options) {
    return HazelcastStore.fromUrl(options.url(), options.failureModes(), options.timeout());
  }
}
