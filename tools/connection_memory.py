#!/usr/bin/env python3
"""What one held HTTP connection costs a server's memory, by what the connection did.

Holds COUNT connections to the server on PORT (whose process is PID) in one state, and
prints the server's RSS growth per connection once it settles:
  idle    connected, nothing sent (the server's floor for a connection);
  served  one request answered (HEAD /v1/stream/quiet), then kept alive;
  sse     a reader parked on an idle stream (GET /v1/stream/quiet?offset=now&live=sse;
          create the stream first).
Start a fresh server for each state: memory a server frees goes back to its allocator, not
to the system, so a second run in the same process reuses it and shows less.

    replayd --http 127.0.0.1:8799 --http-max-connections 20000 --http-header-timeout 600 &
    curl -X PUT http://127.0.0.1:8799/v1/stream/quiet
    tools/connection_memory.py 8799 $! 5000 sse

The same against the bare NIO pipeline (Benchmarks' `http-floor`) gives the framework's
floor under replay's figure (docs/PERFORMANCE.md, "HTTP reads and SSE readers").

usage: tools/connection_memory.py PORT PID COUNT idle|served|sse
"""
import os
import resource
import socket
import sys
import time

port, pid, count, state = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
requests = {
    "idle": None,
    "served": b"HEAD /v1/stream/quiet HTTP/1.1\r\nHost: replay\r\n\r\n",
    "sse": b"GET /v1/stream/quiet?offset=now&live=sse HTTP/1.1\r\nHost: replay\r\n\r\n",
}
if state not in requests:
    sys.exit(__doc__)
limit = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))


def settled_rss():
    time.sleep(3)
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS"))


before = settled_rss()
held = []
for index in range(count):
    connection = socket.create_connection(("127.0.0.1", port))
    if requests[state]:
        connection.sendall(requests[state])
    held.append(connection)
    # Each answer's head read, 200 at a time, so that the server has served every request.
    if requests[state] and (len(held) % 200 == 0 or index == count - 1):
        for answered in held[-(len(held) % 200 or 200) :]:
            if not answered.recv(65536):
                sys.exit("the server closed a connection")
after = settled_rss()
descriptors = len(os.listdir(f"/proc/{pid}/fd"))
print(
    f"{state}: {count} connections, RSS {before / 1e6:.1f} -> {after / 1e6:.1f} MB,"
    f" {(after - before) / count:,.0f} bytes each; the server holds {descriptors} descriptors"
)
for connection in held:
    connection.close()
