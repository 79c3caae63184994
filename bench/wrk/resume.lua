-- (b) GET /v1/attempts/{id} as the attempt's learner. Targets: `attempt learner` lines; the
-- threads share them out and cycle through them (a read may repeat).
package.path = os.getenv("BENCH_LUA") .. "/?.lua;" .. package.path
local common = require("common")
common.install_delay()

setup = common.setup
done = common.done

local reqs, j = {}, 0
function init(args)
  local tokens = common.read_tokens()
  local mine = common.my_targets(function(line)
    local a, l = line:match("^(%S+) (%d+)$")
    return { a = a, l = tonumber(l) }
  end)
  assert(#mine > 0, "no resume targets")
  -- Requests are prepared up front: no string building per request.
  for i, t in ipairs(mine) do
    reqs[i] = wrk.format("GET", "/v1/attempts/" .. t.a, { ["Authorization"] = tokens[t.l] })
  end
end

function request()
  j = j + 1
  if j > #reqs then j = 1 end
  return reqs[j]
end
