-- GCRA (ReferenceModel.gcra). P[1] rate, P[2] period (us), P[3] burst. Work is counted in
-- 1/rate microseconds; one request costs one period. State 'g<TAT whole us>:<TAT fraction, 1/rate us>'.
local q = tonumber(P[1])
local p = tonumber(P[2])
local cap = tonumber(P[3]) * p
local st = load('g', 2, 2 * fdiv(cap, q) + 1) -- a TAT with settlement debt: at most two bursts ahead
if st == nil then
  return CORRUPT
end

local function debt()
  local tat = st[1]
  if tat == 0 or tat < now then
    return 0
  end
  return (tat - now) * q + st[2]
end

local function setDebt(d)
  local whole = fdiv(d, q)
  st[1], st[2] = now + whole, d - whole * q
end

-- a clock behind the state by more than cap / q: the debt is over cap (and (tat - now) q may be
-- inexact), so refuse with the same numbers computed without it (ReferenceModel.gcra)
local function overCap()
  return st[1] ~= 0 and st[1] - now > fdiv(cap, q)
end

local function step(n, charge)
  local need = n * p
  if overCap() then
    return {0, 0, 0, st[1] + cdiv(st[2], q), st[1] - now + cdiv(st[2] + need - cap, q), 0, 0}
  end
  local d = debt()
  if d + need <= cap then
    if charge then
      local after = d + need
      setDebt(after)
      return {0, 1, fdiv(cap - after, p), now + cdiv(after, q), 0, now, 1} -- stamp: the acquire's instant (a ticket's life starts there)
    end
    return {0, 1, fdiv(cap - d, p), now + cdiv(d, q), 0, 0, 0}
  end
  return {0, 0, fdiv(cap - d, p), now + cdiv(d, q), cdiv(d + need - cap, q), 0, 0}
end

local function expires()
  if st[2] > 0 then
    return st[1] + 1
  end
  return st[1]
end

if op == 'a' then
  local res = step(permits, true)
  if res[7] == 1 then
    save('g', st, 2, expires())
  end
  return res
elseif op == 'b' then
  return batch(step, 'g', st, 2, expires)
elseif op == 'p' then
  return step(1, false)
elseif op == 'o' then
  -- a settlement's overrun: more debt, never past the debt ceiling
  local d = debt()
  local d2 = charge(d, permits * p, ceiling(cap, 1))
  if d2 ~= d then
    setDebt(d2)
  end
  local res = step(1, false)
  if d2 ~= d then
    res[7] = 1
    save('g', st, 2, expires())
  end
  return res
end
-- refund: pay back debt, never below zero
local wrote
if overCap() then
  local x = st[2] - permits * p
  local whole = st[1] + fdiv(x, q)
  wrote = true
  if whole < now then
    st[1], st[2] = now, 0
  else
    st[1], st[2] = whole, x - fdiv(x, q) * q
  end
else
  local d = debt()
  wrote = d > 0
  if wrote then
    setDebt(math.max(0, d - permits * p))
  end
end
local res = step(1, false)
if wrote then
  res[7] = 1
  save('g', st, 2, expires())
end
return res
