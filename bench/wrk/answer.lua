-- (c) PUT /v1/attempts/{id}/responses/{question_id} {"selected":[option_id]} as the attempt's
-- learner. Targets: `attempt question_id option_id learner` lines, each a question not answered
-- yet; each is used once (threads take every n-th line from BENCH_OFFSET). If a thread runs out
-- it sends requests that fail (and says so in the result), so a shortage never goes unnoticed.
package.path = os.getenv("BENCH_LUA") .. "/?.lua;" .. package.path
local common = require("common")
common.install_delay()

setup = common.setup
done = common.done

local mine, tokens, j = nil, nil, 0
-- BENCH_WRAP=1 (the plain INSERT yardstick, which records no answer): the targets are used
-- again from the first once used up.
local wrap = os.getenv("BENCH_WRAP") == "1"
consumed = 0
exhausted = false

function init(args)
  tokens = common.read_tokens()
  mine = common.my_targets(function(line)
    local a, q, o, l = line:match("^(%S+) (%S+) (%S+) (%d+)$")
    return { a = a, q = q, o = o, l = tonumber(l) }
  end)
end

function request()
  j = j + 1
  if wrap and j > #mine then j = 1 end
  local t = mine[j]
  if t == nil then
    exhausted = true
    return wrk.format("PUT", "/v1/bench-targets-exhausted", { ["Content-Type"] = "application/json" }, "{}")
  end
  consumed = j
  return wrk.format("PUT", "/v1/attempts/" .. t.a .. "/responses/" .. t.q,
    { ["Authorization"] = tokens[t.l], ["Content-Type"] = "application/json" },
    '{"selected":["' .. t.o .. '"]}')
end
