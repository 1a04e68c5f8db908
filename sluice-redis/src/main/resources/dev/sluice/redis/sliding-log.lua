-- Exact sliding log (SlidingLogState). P[1] limit, P[2] window (us).
-- State: a sorted set with one member per microsecond that admitted permits: member
-- '<time>:<permits>', score <time>. Entries with now - time >= window are dead: they are skipped when
-- read (changing no decision, as in the model) and removed by the next write.
-- Cost: every call reads the live entries, at most one per admitted request in the last window.
local limit = tonumber(P[1])
local w = tonumber(P[2])
local key = KEYS[1]

local times, perms = {}, {}
local n, total = 0, 0
local foreign = false
local kind = redis.call('TYPE', key)['ok']
if kind == 'string' then
  -- a counter algorithm's state under a redefined policy: says nothing about this log
  if not string.find(redis.call('GET', key), '^[fstg][%d:]+$') then
    return CORRUPT
  end
  foreign = true
elseif kind == 'zset' then
  local flat = redis.call('ZRANGEBYSCORE', key, '(' .. str(now - w), '+inf', 'WITHSCORES')
  for i = 1, #flat, 2 do
    local t, p = string.match(flat[i], '^(%d+):(%d+)$')
    if t == nil or #t > 16 or #p > 16 then -- at most 16 digits a field, as the prelude's load()
      return CORRUPT
    end
    t, p = tonumber(t), tonumber(p)
    if t == 0 or t > MAX_FIELD or p > MAX_FIELD or t ~= tonumber(flat[i + 1]) or t - now > TOLERANCE then
      return CORRUPT
    end
    n = n + 1
    times[n], perms[n] = t, p
    total = total + p
  end
elseif kind ~= 'none' then
  return CORRUPT
end

local function member(i)
  return str(times[i]) .. ':' .. str(perms[i])
end

local function expire(expiresAt)
  local ttl = cdiv(expiresAt - now, 1000)
  if ttl <= 0 then
    if grace <= 0 then
      redis.call('DEL', key)
      return
    end
    ttl = 0
  end
  redis.call('PEXPIRE', key, str(ttl + grace))
end

local function refusal(k)
  local needFreed = total + k - limit
  local freed, at = 0, now
  for i = 1, n do
    freed = freed + perms[i]
    if freed >= needFreed then
      at = times[i] + w
      break
    end
  end
  return {0, 0, limit - total, times[1] + w, at - now, 0, 0}
end

local function peek()
  if total + 1 <= limit then
    local resetAt = now + w
    if n > 0 then
      resetAt = times[1] + w
    end
    return {0, 1, limit - total, resetAt, 0, 0, 0}
  end
  return refusal(1)
end

if op == 'a' then
  if total + permits > limit then
    return refusal(permits)
  end
  local t = now
  if n > 0 then
    t = math.max(now, times[n])
  end
  if foreign then
    redis.call('DEL', key)
  else
    redis.call('ZREMRANGEBYSCORE', key, '-inf', str(now - w))
  end
  if n > 0 and times[n] == t then
    redis.call('ZREM', key, member(n))
    perms[n] = perms[n] + permits
  else
    n = n + 1
    times[n], perms[n] = t, permits
  end
  redis.call('ZADD', key, str(t), member(n))
  total = total + permits
  expire(times[n] + w)
  return {0, 1, limit - total, times[1] + w, 0, t, 1}
elseif op == 'p' then
  return peek()
elseif op == 'o' then
  -- a settlement's overrun: added to the live entry of the ticket's stamp, else logged now (merged
  -- with the newest entry at the same instant); the logged total never passes the debt ceiling
  local add = charge(total, permits, ceiling(limit, 1)) - total
  if add <= 0 then
    return peek()
  end
  if foreign then
    redis.call('DEL', key)
  else
    redis.call('ZREMRANGEBYSCORE', key, '-inf', str(now - w))
  end
  local at, fresh = 0, false
  for i = 1, n do
    if times[i] == stamp then
      at = i
      break
    end
  end
  if at == 0 then
    local t = now
    if n > 0 then
      t = math.max(now, times[n])
    end
    if n > 0 and times[n] == t then
      at = n
    else
      n = n + 1
      times[n], perms[n], at, fresh = t, 0, n, true
    end
  end
  if not fresh then
    redis.call('ZREM', key, member(at))
  end
  perms[at] = perms[at] + add
  redis.call('ZADD', key, str(times[at]), member(at))
  total = total + add
  local r = peek()
  r[7] = 1
  expire(times[n] + w)
  return r
end
-- refund: into the live entry counted at the ticket's stamp, if any
local wrote = false
for i = 1, n do
  if times[i] == stamp then
    local give = math.min(permits, perms[i])
    if give > 0 then
      redis.call('ZREM', key, member(i))
      perms[i] = perms[i] - give
      total = total - give
      redis.call('ZADD', key, str(times[i]), member(i))
      wrote = true
    end
    break
  end
end
local r = peek()
if wrote then
  r[7] = 1
  expire(times[n] + w)
end
return r
