-- wrk script: 100-byte POSTs to one Durable Streams stream, for the HTTP append figures in
-- docs/PERFORMANCE.md. Create the stream first (PUT, application/octet-stream), then:
--   wrk -t2 -c16 -d8s --latency -s tools/http_post.lua http://127.0.0.1:PORT/v1/stream/bench
wrk.method = "POST"
wrk.body = string.rep("x", 100)
wrk.headers["Content-Type"] = "application/octet-stream"
