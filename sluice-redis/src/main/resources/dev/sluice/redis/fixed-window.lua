-- Fixed window (ReferenceModel.fixedWindow). P[1] limit, P[2] window (us).
-- State 'f<start>:<count>'.
local limit = tonumber(P[1])
local w = tonumber(P[2])
local st = load('f', 2)
if st == nil then
  return CORRUPT
end

local function step(n, charge)
  local live = st[1] ~= 0 and now - st[1] < w
  local start, count = now, 0
  if live then
    start, count = st[1], st[2]
  end
  local resetAt = start + w
  if count + n <= limit then
    if charge then
      st[1] = start
      st[2] = count + n
      return {0, 1, limit - count - n, resetAt, 0, start, 1}
    end
    return {0, 1, limit - count, resetAt, 0, 0, 0}
  end
  return {0, 0, limit - count, resetAt, resetAt - now, 0, 0}
end

local function expires()
  return st[1] + w
end

if op == 'a' then
  local r = step(permits, true)
  if r[7] == 1 then
    save('f', st, 2, expires())
  end
  return r
elseif op == 'b' then
  return batch(step, 'f', st, 2, expires)
elseif op == 'p' then
  return step(1, false)
elseif op == 'o' then
  -- a settlement's overrun: charged to the live window (the ticket's or a later one), else to a
  -- window opened now; the count never passes the debt ceiling
  local top = ceiling(limit, 1)
  local wrote = true
  if st[1] ~= 0 and now - st[1] < w then
    local c = charge(st[2], permits, top)
    wrote = c ~= st[2]
    st[2] = c
  else
    st[1], st[2] = now, math.min(permits, top)
  end
  local r = step(1, false)
  if wrote then
    r[7] = 1
    save('f', st, 2, expires())
  end
  return r
end
-- refund
local wrote = st[1] ~= 0 and now - st[1] < w and st[1] == stamp and st[2] > 0
if wrote then
  st[2] = math.max(0, st[2] - permits)
end
local r = step(1, false)
if wrote then
  r[7] = 1
  save('f', st, 2, expires())
end
return r
