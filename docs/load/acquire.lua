-- wrk script for POST /v1/acquire: each request a JSON body for one of KEYS keys (env, default 1000)
-- under POLICY (env, default "api"); prints how many answers were 200, 429, 503 and other.
--   wrk -t2 -c32 -d10s -s docs/load/acquire.lua http://127.0.0.1:8080/v1/acquire
local keys = tonumber(os.getenv("KEYS") or "1000")
local policy = os.getenv("POLICY") or "api"
local threads = {}

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

function init(args)
  n, ok, limited, unavailable, other = 0, 0, 0, 0, 0
end

function request()
  n = n + 1
  local body = string.format('{"policy":"%s","key":"user:%d-%d"}', policy, id, n % keys)
  return wrk.format("POST", nil, { ["Content-Type"] = "application/json" }, body)
end

function response(status, headers, body)
  if status == 200 then ok = ok + 1 elseif status == 429 then limited = limited + 1
  elseif status == 503 then unavailable = unavailable + 1 else other = other + 1 end
end

function done(summary, latency, requests)
  local a, r, u, o = 0, 0, 0, 0
  for _, t in ipairs(threads) do
    a = a + t:get("ok"); r = r + t:get("limited"); u = u + t:get("unavailable"); o = o + t:get("other")
  end
  io.write(string.format("answers: %d x 200 (allowed), %d x 429 (refused), %d x 503 (timeout or overloaded), %d other\n", a, r, u, o))
  io.write(string.format("latency p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency:percentile(99.9) / 1000))
end
