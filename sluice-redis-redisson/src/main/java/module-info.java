/** Sluice's Redis backend on Redisson: a {@code RedisTransport} over a {@code RedissonClient}'s async scripts. */
// Redisson is an automatic module; its types are in the transport's signatures, hence transitive.
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"})
module dev.sluice.redis.redisson {
  requires transitive dev.sluice.redis;
  requires transitive redisson;
  exports dev.sluice.redis.redisson;

  // The kernel's StoreFactory ('redis-redisson'), for applications built on the kernel. Read statically, and
  // found through META-INF/services on the class path (where sluice serve runs): a 'provides' clause
  // would make the module unresolvable on a module path without the kernel.
  requires static dev.sluice.kernel;
}
