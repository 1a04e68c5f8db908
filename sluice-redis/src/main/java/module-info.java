/** Sluice on Redis: one Lua script per algorithm, one round trip per decision. */
module dev.sluice.redis {
  requires transitive dev.sluice.core;
  requires transitive lettuce.core;
  exports dev.sluice.redis;
}
