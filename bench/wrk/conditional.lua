-- (a) the same GET /v1/quizzes/{slug}?lang=… as quiz.lua, from a client that holds the current
-- copy: `If-None-Match: <its ETag>` (BENCH_ETAG), so quizd answers 304 with no body. bench/run
-- checks with curl first that the tag is current (a 304, no body) and the report gives the
-- bytes per response.
package.path = os.getenv("BENCH_LUA") .. "/?.lua;" .. package.path
local common = require("common")
common.install_delay()

wrk.headers["If-None-Match"] = assert(os.getenv("BENCH_ETAG"), "BENCH_ETAG unset")

setup = common.setup
done = common.done
