-- Shared by the wrk scripts of `bench http` (src/bin/bench/http/): thread
-- numbering, the per-request headers of the API (bearer token,
-- Idempotency-Key), counting answers that are not 2xx, and one result line
-- the bench parses. Settings come from the environment the bench sets:
--   CK_TOKEN    the API bearer token
--   CK_THREADS  wrk's -t (so each thread takes its own share of the rows)
--   CK_RUN      a tag unique to this run (users and keys never repeat)
-- wrk counts only statuses >= 400 as errors; a 3xx (a console page sending
-- the caller to /login) would pass as success, so every answer outside
-- 200-299 is counted here.

local threads = {}
local next_id = 1

function setup(thread)
   thread:set("tid", next_id)
   next_id = next_id + 1
   table.insert(threads, thread)
end

ck = {
   token = os.getenv("CK_TOKEN") or "",
   threads = tonumber(os.getenv("CK_THREADS") or "1"),
   run = os.getenv("CK_RUN") or "r",
}

-- Per thread (each wrk thread has its own Lua state): its number, how many
-- requests it built, how many answers were not 2xx.
tid = 0
sent = 0
non2xx = 0

function init(args)
   -- `tid` was set by setup() before init runs.
   math.randomseed(tid * 7919 + os.time())
end

-- The k-th row of this thread (1-based): rows tid, tid + T, tid + 2T, ...
function ck.next_row()
   local row = tid + ck.threads * sent
   sent = sent + 1
   return row
end

function ck.api_headers(key)
   local h = {
      ["Authorization"] = "Bearer " .. ck.token,
      ["Content-Type"] = "application/json",
   }
   if key then
      h["Idempotency-Key"] = key
   end
   return h
end

function response(status, headers, body)
   if status < 200 or status > 299 then
      non2xx = non2xx + 1
   end
end

function done(summary, latency, requests)
   local bad = 0
   for _, t in ipairs(threads) do
      bad = bad + (t:get("non2xx") or 0)
   end
   local e = summary.errors
   io.write(string.format(
      "CKRESULT requests=%d duration_us=%d non2xx=%d socket_errors=%d p50_us=%d p99_us=%d\n",
      summary.requests, summary.duration, bad,
      e.connect + e.read + e.write + e.timeout,
      latency:percentile(50), latency:percentile(99)))
end
