/**
 * Sluice on Hazelcast: the reference step runs on the partition owner of each budget's entry as an
 * entry processor over an {@code IMap}, one network hop per decision, on an embedded member or a client.
 */
// Hazelcast is an automatic module (com.hazelcast.core); its types are in the builders' signatures, hence transitive.
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"})
module dev.sluice.hazelcast {
  requires transitive dev.sluice.core;
  requires transitive com.hazelcast.core;
  requires transitive dev.sluice.kernel;

  exports dev.sluice.hazelcast;

  provides dev.sluice.kernel.StoreFactory with dev.sluice.hazelcast.HazelcastStoreFactory;
}
