-- Sluice: shared prelude of every algorithm script (the loader prepends it to each algorithm file).
--
-- A port of dev.sluice.model.ReferenceModel. Lua numbers are IEEE doubles: integers are exact up to
-- 2^53, and the Java side guarantees (Algorithm validation, Checks.MAX_EXACT, MAX_AHEAD, MAX_CLOCK) that no
-- product or sum computed here leaves that range. Division never trusts the floating quotient alone:
-- fdiv corrects it by one with an exact remainder, so floor and ceiling are exact integers.
--
-- KEYS[1]  the stored key: sluice:{<StoredId.key(policy, key)>}
-- KEYS[2]  'r' and 'o' only: the ticket's spent key, sluice:{<StoredId.key(policy, key)>}:t:<ticket id>
--          (the budget's hash tag: the same Cluster slot as KEYS[1])
-- ARGV[1]  'a' acquire, 'p' peek, 'r' refund, 'o' a settlement's overrun (ReferenceModel.settle),
--          'b' a batch of acquires (coalesced requests)
-- ARGV[2]  now in epoch microseconds, or '' to read the server clock (TIME)
-- ARGV[3]  permits; for 'b' the permits of each request in arrival order, separated by spaces
-- ARGV[4]  ticket stamp (refund, overrun)
-- ARGV[5]  extra milliseconds of TTL (grace for supplied clocks; 0 with the server clock)
-- ARGV[6]  the instant the ticket's life ends (ReferenceModel.ticketExpiresAt; refund, overrun)
-- ARGV[7..] algorithm parameters (the caller's policy; the key's override replaces them, below)
-- The key's override (KeyOverrides) lives beside the state, at KEYS[1] .. ':o' (the same hash tag:
-- one Cluster slot; derived here so that a call sends no more than before), with no TTL.
--
-- Reply: {status, allowed, remaining, resetAt, retryAfter, stamp, wrote}; for 'b' those seven per
-- request, one after the other (a corrupt state or bad clock: the seven of the failure, once); a
-- decision under the key's override ends with the override's value, one more field
--   status 0 = decided, 1 = corrupt state (nothing written), 2 = invalid clock (nothing written),
--   3 = the key's override is of another algorithm (nothing written): {3, 0, 0, 0, 0, 0, 0, <override>},
--       and the client runs that algorithm's script
-- A refused acquire and every peek write nothing.

-- Both substituted from dev.sluice.internal.Checks when the script is loaded (RedisScript): one
-- value for every backend.
local MAX_CLOCK = ${MAX_CLOCK}          -- the largest clock reading accepted
local MAX_EXACT = ${MAX_EXACT}          -- the largest exact product (settlement's debt ceiling)
local MAX_FIELD = ${MAX_STATE_WORD}     -- the largest stored field a state may hold
local TOLERANCE = ${CLOCK_TOLERANCE}    -- how far ahead of now a state may lie beyond what its policy writes

local function fdiv(a, b)
  local q = math.floor(a / b)
  local r = a - q * b
  if r < 0 then
    q = q - 1
  elseif r >= b then
    q = q + 1
  end
  return q
end

local function cdiv(a, b)
  return -fdiv(-a, b)
end

local function str(v)
  return string.format('%.0f', v)
end

local op = ARGV[1]
local now
if ARGV[2] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[2])
end
if now == nil or now <= 0 or now > MAX_CLOCK or now ~= math.floor(now) then
  return {2, 0, 0, 0, 0, 0, 0}
end

-- The key's override: '<script tag> <parameters as the client sends them>|<algorithm as Sluice stores
-- it>' (RedisPlan.overrideValue). Of this script's algorithm, its parameters replace the caller's; of
-- another, the client is told to run that one's script, before anything is written. Anything else
-- there is a value Sluice did not write: corrupt.
local P = {ARGV[7], ARGV[8], ARGV[9]}
local OV = redis.call('GET', KEYS[1] .. ':o')
if OV then
  local tag, a, b, c = string.match(OV, '^(%a) (%d+) (%d+) ?(%d*)|')
  if tag == nil then
    return {1, 0, 0, 0, 0, 0, 0}
  end
  if tag ~= '${TAG}' then
    return {3, 0, 0, 0, 0, 0, 0, OV}
  end
  P = {a, b, c}
end
local permits = tonumber(ARGV[3])
local stamp = tonumber(ARGV[4])
local grace = tonumber(ARGV[5])

-- A ticket changes its budget once, whatever the timing (issue 26): a refund or an overrun records
-- the ticket as spent (KEYS[2]) in this same script, which Redis runs atomically, and keeps the
-- record until the ticket's life ends (plus the grace). A ticket already recorded, or past its life,
-- is answered as a peek: nothing written, no effect. So a script run twice (a reply lost and the
-- command sent again, or a caller's retry after an unknown outcome) applies once.
if op == 'r' or op == 'o' then
  local ends = tonumber(ARGV[6])
  if ends == nil or now >= ends or redis.call('EXISTS', KEYS[2]) == 1 then
    op = 'p'
  else
    redis.call('SET', KEYS[2], '1', 'PX', str(cdiv(ends - now, 1000) + grace))
  end
end

-- Reads the state: returns st (a 3-slot array, zeros = absent), or nil when the value is not a
-- state Sluice wrote (wrong type, garbage). A state another algorithm wrote under the same policy
-- name (the policy was redefined) is treated as absent: it says nothing about this algorithm. SET
-- replaces it, whatever its type. A state whose first word lies more than TOLERANCE + ahead (what
-- the policy itself may write ahead of its clock) after now is not trusted either (nil). The sliding
-- window's aligned start may be 0 (a clock under one window).
local function load(tag, fields, ahead)
  local raw = redis.pcall('GET', KEYS[1])
  if type(raw) == 'table' then
    -- not a string: the sliding log's sorted set under a redefined policy is absent state here,
    -- anything else is corrupt
    if redis.call('TYPE', KEYS[1])['ok'] == 'zset' then
      local first = redis.call('ZRANGE', KEYS[1], 0, 0)
      if first[1] == nil or string.find(first[1], '^%d+:%d+$') then
        return {0, 0, 0}
      end
    end
    return nil
  end
  if not raw then
    return {0, 0, 0}
  end
  local head = string.sub(raw, 1, 1)
  if head ~= tag then
    if (head == 'f' or head == 's' or head == 't' or head == 'g') and string.find(raw, '^%a[%d:]+$') then
      return {0, 0, 0}
    end
    return nil
  end
  local a, b, c
  if fields == 2 then
    a, b = string.match(raw, '^%a(%d+):(%d+)$')
    c = '0'
  else
    a, b, c = string.match(raw, '^%a(%d+):(%d+):(%d+)$')
  end
  -- at most 16 digits a field, as every field Sluice writes (at most MAX_FIELD): tested on the
  -- lengths, cheaper than a pattern of 16 optional digits, which backtracks on every read
  if a == nil or #a > 16 or #b > 16 or #c > 16 then
    return nil
  end
  local st = {tonumber(a), tonumber(b), tonumber(c)}
  if (st[1] == 0 and tag ~= 's') or st[1] > MAX_FIELD or st[2] > MAX_FIELD or st[3] > MAX_FIELD then
    return nil
  end
  if st[1] - now > TOLERANCE + (ahead or 0) then
    return nil
  end
  return st
end

-- Writes the state with a TTL that ends when it can no longer matter (ReferenceModel.expiresAt),
-- or deletes it when that moment has already come (it then decides exactly like an absent state).
local function save(tag, st, fields, expiresAt)
  local ttl = cdiv(expiresAt - now, 1000)
  if ttl <= 0 then
    if grace <= 0 then
      redis.call('DEL', KEYS[1])
      return
    end
    ttl = 0
  end
  local v
  if fields == 2 then
    v = tag .. str(st[1]) .. ':' .. str(st[2])
  else
    v = tag .. str(st[1]) .. ':' .. str(st[2]) .. ':' .. str(st[3])
  end
  redis.call('SET', KEYS[1], v, 'PX', str(ttl + grace))
end

local CORRUPT = {1, 0, 0, 0, 0, 0, 0}

-- A batch of acquires (op 'b'): each request decided by step(n, true) on the state the one before
-- left, at one instant, exactly as one acquire after another; one write at the end if any changed it.
-- Like ceiling and charge below, defined only for the op that calls it: a closure costs every call
-- that creates it (about 3 % of an acquire, counted with script-cost.sh --callgrind).
local batch, ceiling, charge
if op == 'b' then batch = function(step, tag, st, fields, expires)
  local out, wrote = {}, false
  for n in string.gmatch(ARGV[3], '%d+') do
    local r = step(tonumber(n), true)
    if r[7] == 1 then
      wrote = true
    end
    for i = 1, 7 do
      out[#out + 1] = r[i]
    end
  end
  if wrote then
    save(tag, st, fields, expires())
  end
  return out
end end

-- Settlement (ReferenceModel.debtCeiling, charge): the most a count, or GCRA's debt, may reach
-- through overruns (one limit of debt, no product past MAX_EXACT), and an overrun charged up to it.
if op == 'o' then ceiling = function(most, unit)
  local bound = fdiv(MAX_EXACT, unit)
  if most <= fdiv(bound, 2) then
    return 2 * most
  end
  return math.max(most, bound)
end

charge = function(value, delta, top)
  if value >= top then
    return value
  end
  return math.min(top, value + delta)
end end
