-- wrk script: 100-byte POSTs to one Durable Streams stream as idempotent producers
-- (Producer-Id, Producer-Epoch, Producer-Seq), the idempotent-producer figure of
-- docs/PERFORMANCE.md. One producer per wrk thread, so give as many threads as connections.
-- With PLAIN=1 in the environment it sends the same POSTs without the producer's headers,
-- built and answered through the same Lua, so that the two runs differ only by the guarantee
-- (tools/http_post.lua's fixed request costs wrk less, and would flatter the plain run):
--   wrk -t16 -c16 -d8s --latency -s tools/http_post_producer.lua http://127.0.0.1:PORT/v1/stream/bench
--   PLAIN=1 wrk -t16 -c16 -d8s --latency -s tools/http_post_producer.lua http://127.0.0.1:PORT/v1/stream/bench
--
-- wrk builds a thread's first request before the thread's connection is up, and on some
-- threads never sends it: that producer's next request then skips a sequence number and is
-- refused (400, "expects pseq=N"). The refusal names the number the server expects, and the
-- thread goes on from there, so a run shows one refused POST at most per thread.
-- Producer ids are new in each run (the start time is in them): a second run against the
-- same daemon would otherwise start again at pseq 0 and be answered as duplicates.
local threads = 0
local run = tostring(os.time())
function setup(thread)
  threads = threads + 1
  thread:set("producer", "wrk-" .. run .. "-" .. threads)
end

sequence = 0
local body = string.rep("x", 100)
local plain = os.getenv("PLAIN") == "1"

function request()
  local headers = { ["Content-Type"] = "application/octet-stream" }
  if not plain then
    headers["Producer-Id"] = producer
    headers["Producer-Epoch"] = "0"
    headers["Producer-Seq"] = tostring(sequence)
    sequence = sequence + 1
  end
  return wrk.format("POST", nil, headers, body)
end

function response(status, headers, body)
  if status == 400 then
    local expected = string.match(body or "", "expects pseq=(%d+)")
    if expected then sequence = tonumber(expected) end
  end
end
