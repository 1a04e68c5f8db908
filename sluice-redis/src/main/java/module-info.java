/** Sluice on Redis: one Lua script per algorithm, one round trip per decision. */
// Lettuce is an automatic module; its types are in the builders' signatures, hence transitive.
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"})
module dev.sluice.redis {
  requires transitive dev.sluice.core;
  requires transitive lettuce.core;
  exports dev.sluice.redis;
}
