-- Shared by the wrk scripts of bench/run (wrk 4 runs LuaJIT: one Lua state per thread, plus
-- the main one for setup/done).
--
-- Environment:
--   BENCH_RESULT   file to append the run's result to (one JSON line)
--   BENCH_LABEL    scenario/system/phase/run, copied into the result ("a quizd max 1")
--   BENCH_RATE     offered requests per second over all threads; 0 or unset: as fast as it goes
--   BENCH_TARGETS  (resume, answer) the target file; BENCH_OFFSET the first line to use
--   BENCH_TOKENS   (resume, answer) `learner-index access-token` lines
--
-- Pacing (BENCH_RATE > 0) follows a schedule, as wrk2 does: each thread owns rate/threads
-- request slots per second at fixed times and each request waits for its slot (wrk's delay()
-- hook, millisecond resolution). A request whose slot has passed goes at once, so the
-- schedule is kept while the server keeps up; latency is measured by wrk from the moment the
-- request is written.

local M = {}

local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec_t;
int clock_gettime(int clk_id, bench_timespec_t *tp);
]]
local ts = ffi.new("bench_timespec_t")
function M.now_us()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) * 1e6 + tonumber(ts.tv_nsec) / 1e3
end

M.rate = tonumber(os.getenv("BENCH_RATE") or "0") or 0
M.threads = {}
local counter = 0

-- Main state: number the threads, keep them for done().
function M.setup(thread)
  thread:set("tid", counter)
  counter = counter + 1
  table.insert(M.threads, thread)
end

function M.nthreads()
  return tonumber(os.getenv("BENCH_THREADS") or "1")
end

-- The pacing hook, when a rate is set (called at the top of each script, in every Lua state).
function M.install_delay()
  if M.rate <= 0 then return end
  local interval = 1e6 * M.nthreads() / M.rate
  local next_slot = nil
  _G.delay = function()
    local now = M.now_us()
    if next_slot == nil then next_slot = now end
    next_slot = next_slot + interval
    local d = (next_slot - now) / 1000
    if d < 0 then return 0 end
    return math.floor(d)
  end
end

function M.read_lines(path)
  local out = {}
  for line in io.lines(path) do
    if line ~= "" then out[#out + 1] = line end
  end
  return out
end

function M.read_tokens()
  local tokens = {}
  for _, line in ipairs(M.read_lines(os.getenv("BENCH_TOKENS"))) do
    local i, t = line:match("^(%d+) (%S+)$")
    tokens[tonumber(i)] = "Bearer " .. t
  end
  return tokens
end

-- The thread's share of the target file: lines offset+tid, offset+tid+threads, … (0-based).
function M.my_targets(parse)
  local offset = tonumber(os.getenv("BENCH_OFFSET") or "0")
  local n = M.nthreads()
  local mine, i = {}, 0
  for line in io.lines(os.getenv("BENCH_TARGETS")) do
    if i >= offset and (i - offset) % n == tid then mine[#mine + 1] = parse(line) end
    i = i + 1
  end
  return mine
end

-- Main state: one JSON line with wrk's numbers (microseconds) and, where the script counts
-- them, how far into the target file the threads went.
function M.done(summary, latency, requests)
  local e = summary.errors
  local errors = e.connect + e.read + e.write + e.status + e.timeout
  local used, exhausted = 0, 0
  for _, t in ipairs(M.threads) do
    local c = tonumber(t:get("consumed") or 0) or 0
    if c > used then used = c end
    if t:get("exhausted") then exhausted = 1 end
  end
  local scenario, system, phase, run = (os.getenv("BENCH_LABEL") or "? ? ? ?"):match("(%S+) (%S+) (%S+) (%S+)")
  local secs = summary.duration / 1e6
  local line = string.format(
    '{"scenario":"%s","system":"%s","phase":"%s","run":"%s","rate":%s,"rps":%.2f,"requests":%d,'
    .. '"errors":%d,"error_detail":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},'
    .. '"p50_ms":%.3f,"p90_ms":%.3f,"p99_ms":%.3f,"max_ms":%.3f,"mean_ms":%.3f,"bytes":%d,'
    .. '"seconds":%.3f,"consumed_per_thread":%d,"threads":%d,"exhausted":%s}\n',
    scenario, system, phase, run, M.rate > 0 and tostring(M.rate) or "null",
    summary.requests / secs, summary.requests, errors, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency.max / 1000, latency.mean / 1000, summary.bytes, secs, used, #M.threads,
    exhausted == 1 and "true" or "false")
  local f = assert(io.open(os.getenv("BENCH_RESULT"), "a"))
  f:write(line)
  f:close()
  io.write(string.format("  %s: %.0f req/s, p50 %.2f ms, p99 %.2f ms, errors %d\n",
    os.getenv("BENCH_LABEL") or "", summary.requests / secs, latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, errors))
end

return M
