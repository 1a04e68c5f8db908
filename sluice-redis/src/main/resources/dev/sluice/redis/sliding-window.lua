-- Sliding window, two-window weighted counter (ReferenceModel.slidingWindow).
-- P[1] limit, P[2] window (us). State 's<start>:<current count>:<previous count>'.
local limit = tonumber(P[1])
local w = tonumber(P[2])
local st = load('s', 3)
if st == nil then
  return CORRUPT
end

local function step(n, charge)
  local s0, s1, s2 = st[1], st[2], st[3]
  local a = fdiv(now, w) * w
  local start, cur, prev
  if s0 + w < a then
    start, cur, prev = a, 0, 0
  elseif s0 + w == a then
    start, cur, prev = a, 0, s1
  else
    start, cur, prev = s0, s1, s2
  end
  local e = math.max(0, now - start)
  local estimate = cur
  if prev ~= 0 then
    estimate = cur + cdiv(prev * (w - e), w)
  end
  local resetAt = start + w
  if estimate + n <= limit then
    if charge then
      st[1], st[2], st[3] = start, cur + n, prev
      return {0, 1, limit - estimate - n, resetAt, 0, start, 1}
    end
    return {0, 1, limit - estimate, resetAt, 0, 0, 0}
  end
  local avail = limit - n - cur
  local at = -1
  if avail >= 0 and prev > 0 then
    local ePrime = w - fdiv(avail * w, prev)
    if ePrime < w then
      at = start + ePrime
    end
  end
  if at < 0 then
    local eNext = 0
    if cur ~= 0 then
      eNext = math.max(0, w - fdiv((limit - n) * w, cur))
    end
    at = start + w + eNext
  end
  return {0, 0, limit - estimate, resetAt, at - now, 0, 0}
end

local function expires()
  return st[1] + 2 * w
end

if op == 'a' then
  local r = step(permits, true)
  if r[7] == 1 then
    save('s', st, 3, expires())
  end
  return r
elseif op == 'b' then
  return batch(step, 's', st, 3, expires)
elseif op == 'p' then
  return step(1, false)
end
-- refund and overrun: normalise a copy to now
local a = fdiv(now, w) * w
local n0, n1, n2 = st[1], st[2], st[3]
if n0 + w < a then
  n0, n1, n2 = a, 0, 0
elseif n0 + w == a then
  n0, n1, n2 = a, 0, n1
end
if op == 'o' then
  -- a settlement's overrun: charged to the current window, never past the debt ceiling
  local c = charge(n1, permits, ceiling(limit, w))
  local wrote = c ~= n1
  if wrote then
    st[1], st[2], st[3] = n0, c, n2
  end
  local r = step(1, false)
  if wrote then
    r[7] = 1
    save('s', st, 3, expires())
  end
  return r
end
-- refund: give back only into the window the permits were counted in
local wrote = n0 == stamp and n1 > 0
if wrote then
  st[1], st[2], st[3] = n0, math.max(0, n1 - permits), n2
end
local r = step(1, false)
if wrote then
  r[7] = 1
  save('s', st, 3, expires())
end
return r
