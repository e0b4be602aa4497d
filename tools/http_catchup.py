#!/usr/bin/env python3
"""Reads a Durable Streams stream from its start over one keep-alive connection, following
Stream-Next-Offset until Stream-Up-To-Date, three times, and prints the bytes, responses and
MB/s of each: the HTTP catch-up figures in docs/PERFORMANCE.md, for replayd or any server.

usage: tools/http_catchup.py PORT [STREAM]
"""
import http.client
import sys
import time

port = int(sys.argv[1])
stream = sys.argv[2] if len(sys.argv) > 2 else "big"
for _ in range(3):
    connection = http.client.HTTPConnection("127.0.0.1", port)
    offset, total, responses = "-1", 0, 0
    started = time.time()
    while True:
        connection.request("GET", f"/v1/stream/{stream}?offset={offset}")
        response = connection.getresponse()
        body = response.read()
        if response.status != 200:
            sys.exit(f"GET answered {response.status}: {body[:200]!r}")
        total += len(body)
        responses += 1
        offset = response.getheader("Stream-Next-Offset")
        if response.getheader("Stream-Up-To-Date") == "true" or not body:
            break
    elapsed = time.time() - started
    print(f"port {port}: {total} bytes in {responses} responses, {elapsed * 1000:.0f} ms, {total / elapsed / 1e6:.0f} MB/s")
