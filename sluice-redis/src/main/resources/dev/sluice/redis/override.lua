-- Sluice: a key's override (KeyOverrides), kept beside its state at sluice:{<StoredId.key(policy, key)>}:o
-- with no TTL: configuration, not state. The decision scripts read it (prelude.lua); this one writes it.
--
-- KEYS[1]  the override's key
-- ARGV[1]  's' set it to ARGV[2] (RedisPlan.overrideValue), 'c' clear it, 'g' get it
-- Reply: {1} or {0} for 's' and 'c' (whether there was one); {value} or {} for 'g'
local op = ARGV[1]
if op == 's' then
  local had = redis.call('EXISTS', KEYS[1])
  redis.call('SET', KEYS[1], ARGV[2])
  return {had}
elseif op == 'c' then
  return {redis.call('DEL', KEYS[1])}
end
local v = redis.call('GET', KEYS[1])
if v then
  return {v}
end
return {}
