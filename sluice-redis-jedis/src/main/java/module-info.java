/** Sluice's Redis backend on Jedis: a {@code RedisTransport} over a {@code UnifiedJedis}. */
// Jedis is an automatic module; its types are in the transport's signatures, hence transitive.
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"})
module dev.sluice.redis.jedis {
  requires transitive dev.sluice.redis;
  requires transitive redis.clients.jedis;
  exports dev.sluice.redis.jedis;

  // The kernel's StoreFactory ('redis-jedis'), for applications built on the kernel. Read statically, and
  // found through META-INF/services on the class path (where sluice serve runs): a 'provides' clause
  // would make the module unresolvable on a module path without the kernel.
  requires static dev.sluice.kernel;
}
