-- Token bucket (ReferenceModel.tokenBucket). P[1] capacity, P[2] refill tokens, P[3] refill
-- period (us). Tokens are kept scaled by the period. State 't<time of last update>:<scaled tokens>'.
local capacity = tonumber(P[1])
local r = tonumber(P[2])
local p = tonumber(P[3])
local full = capacity * p
local st = load('t', 2, fdiv(full, r) + 1) -- a bucket a capacity in debt: its update time that far ahead
if st == nil then
  return CORRUPT
end

local function refill()
  if st[1] == 0 then
    return full
  end
  local s = st[2]
  local elapsed = now - st[1]
  if elapsed <= 0 then
    return s
  end
  local toFull = cdiv(full - s, r)
  if elapsed >= toFull then
    return full
  end
  return s + elapsed * r
end

local function step(n, charge)
  local t = now
  if st[1] ~= 0 then
    t = math.max(now, st[1])
  end
  local s = refill()
  local need = n * p
  if s >= need then
    if charge then
      local after = s - need
      st[1], st[2] = t, after
      return {0, 1, fdiv(after, p), t + cdiv(full - after, r), 0, now, 1} -- stamp: the acquire's instant (a ticket's life starts there)
    end
    return {0, 1, fdiv(s, p), t + cdiv(full - s, r), 0, 0, 0}
  end
  return {0, 0, fdiv(s, p), t + cdiv(full - s, r), t + cdiv(need - s, r) - now, 0, 0}
end

local function expires()
  return st[1] + cdiv(full - st[2], r)
end

if op == 'a' then
  local res = step(permits, true)
  if res[7] == 1 then
    save('t', st, 2, expires())
  end
  return res
elseif op == 'b' then
  return batch(step, 't', st, 2, expires)
elseif op == 'p' then
  return step(1, false)
end
-- refund ('r', permits back, capped at capacity) and a settlement's overrun ('o', charged at most a
-- capacity below empty), on the balance at now: negative while the bucket is in debt, which is
-- kept as an update time ahead of the clock (when the debt is paid) and what is left over then
local function balance()
  local lag = st[1] - now
  if st[1] == 0 or lag <= 0 then
    return refill()
  end
  if lag >= cdiv(st[2] + full, r) then
    return -full
  end
  return st[2] - lag * r
end
local delta = permits
if op == 'r' then
  delta = -permits
end
local b = balance()
local b2 = math.max(-full, math.min(full, b - delta * p))
local wrote = b2 ~= b
if wrote and b2 >= 0 then
  st[1], st[2] = now, b2
elseif wrote then
  local k = cdiv(-b2, r)
  st[1], st[2] = now + k, math.min(full, k * r + b2)
end
local res = step(1, false)
if wrote then
  res[7] = 1
  save('t', st, 2, expires())
end
return res
