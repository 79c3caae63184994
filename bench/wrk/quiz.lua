-- (a) GET /v1/quizzes/{slug}?lang=… : the same request every time (wrk's static request,
-- no Lua per request unless paced). The URL given to wrk carries path and query.
package.path = os.getenv("BENCH_LUA") .. "/?.lua;" .. package.path
local common = require("common")
common.install_delay()

setup = common.setup
done = common.done
