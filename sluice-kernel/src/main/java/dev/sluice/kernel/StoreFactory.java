package dev.sluice.kernel;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;
import java.util.function.Function;

/**
 * Opens a {@link Store} by the name configuration gives it. The kernel's own are {@code memory},
 * {@code redis} and {@code postgres}; a module that adds a store (another Redis client, Hazelcast)
 * provides a factory ({@code provides dev.sluice.kernel.StoreFactory with ...}, or a
 * {@code META-INF/services} entry on the class path) and every front end can name it, with no switch
 * to edit.
 */
public interface StoreFactory {
  /** The word that names the store in configuration. */
  String name();

  /** Opens the store as {@code options} say; a wrong option is an {@link IllegalArgumentException} naming it. */
  Store open(StoreOptions options);

  /** The kernel's factories, then those on the module or class path, in that order. */
  static List<StoreFactory> all() {
    List<StoreFactory> all = new ArrayList<>(List.of(MEMORY, REDIS, POSTGRES));
    ServiceLoader.load(StoreFactory.class).forEach(all::add);
    return all;
  }

  /** The factory named {@code name} (exactly, lower case); unknown names are refused with the known ones. */
  static StoreFactory named(String name) {
    List<StoreFactory> all = all();
    for (StoreFactory f : all) {
      if (f.name().equals(name)) {
        return f;
      }
    }
    throw new IllegalArgumentException("store " + (name == null ? "null" : "'" + name + "'") + " is unknown; the stores are "
        + String.join(", ", all.stream().map(StoreFactory::name).toList()));
  }

  /**
   * A factory from its name and how it opens; the kernel's own are {@link #MEMORY}, {@link #REDIS} and
   * {@link #POSTGRES}.
   */
  static StoreFactory of(String name, Function<StoreOptions, Store> open) {
    return new Named(name, open);
  }

  /** {@code memory}: {@link Store#memory(int, int, dev.sluice.Ticker)} of the options' key bounds and clock. */
  StoreFactory MEMORY = of("memory", o -> Store.memory(o.maxKeys(), o.maxKeyLength(), o.ticker()));

  /** {@code redis}: {@link RedisStore#fromUrl} on the options' URL. */
  StoreFactory REDIS = of("redis", o -> RedisStore.fromUrl(o.url(), o.failureModes(), o.timeout()));

  /** {@code postgres}: {@link PostgresStore#fromUrl} on the options' URL and table (100 ms calls unless told). */
  StoreFactory POSTGRES = of("postgres", o -> PostgresStore.fromUrl(o.url(), o.table(), o.failureModes(),
      o.timeout() != null ? o.timeout() : Duration.ofMillis(100), o.sweepInterval()));

  /** A factory as {@link #of} makes it. */
  record Named(String name, Function<StoreOptions, Store> opener) implements StoreFactory {
    @Override public Store open(StoreOptions options) {
      return opener.apply(options);
    }
  }
}
