#!/usr/bin/env python3
"""Many SSE readers on one replayd: the memory, descriptors and CPU each costs, and whether
every reader gets every event, and how late.

Creates STREAMS text streams, connects READERS readers spread over them
(`offset=now&live=sse`), then publishes RATE events a second in total for SECONDS over
HTTP, round robin over the streams. Each payload carries its publish time; each reader
counts what it gets and how long after publishing. Prints the daemon's RSS idle, with the
readers connected and after the events, its descriptors, its CPU per delivery, and the
deliveries with their p50/p99 publish-to-delivery latency.

The client is Python's asyncio on the same cores as the daemon: its own delays count in
the latency, so the figure is an upper bound for the daemon's.

usage: tools/sse_readers.py PORT PID [READERS=10000] [STREAMS=100] [RATE=100] [SECONDS=10]
"""
import asyncio
import os
import sys
import time

port, pid = int(sys.argv[1]), int(sys.argv[2])
readers, streams, rate, seconds = (int(a) for a in (sys.argv[3:] + ["10000", "100", "100", "10"][len(sys.argv) - 3 :])[:4])
prefix = f"sse-readers-{os.getpid()}-"


def rss_kb():
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))


def cpu_seconds():
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def request(method, path, headers="", body=b""):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n{headers}Connection: close\r\n\r\n".encode() + body)
    await writer.drain()
    status = (await reader.readline()).split()[1]
    await reader.read()
    writer.close()
    return int(status)


async def read(index, connected, latencies, counts):
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
    writer.write(f"GET /v1/stream/{prefix}{index % streams}?offset=now&live=sse HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        status = head.split(b"\r\n")[0].decode()
        sys.exit(f"reader {index} answered {status} (replayd --http-max-connections?)")
    connected.append(1)
    while True:
        line = await reader.readline()
        if not line:
            return
        # A chunked body: data lines of the payloads ("<index> <ns>"), among chunk sizes,
        # event names and control events.
        if line.startswith(b"data:") and not line.startswith(b"data:{"):
            parts = line[5:].split()
            if len(parts) == 2 and parts[1].isdigit():
                latencies.append(time.time_ns() - int(parts[1]))
                counts[index] += 1


async def publish(stop_at):
    connections = [await asyncio.open_connection("127.0.0.1", port) for _ in range(4)]
    sent, started = 0, time.monotonic()
    while time.monotonic() < stop_at:
        due = started + sent / rate
        if due > time.monotonic():
            await asyncio.sleep(due - time.monotonic())
        reader, writer = connections[sent % len(connections)]
        body = f"{sent} {time.time_ns()}\n".encode()
        writer.write(
            f"POST /v1/stream/{prefix}{sent % streams} HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body)
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        length = next((int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")), 0)
        if length:
            await reader.readexactly(length)
        sent += 1
    return sent


async def main():
    for s in range(streams):
        status = await request("PUT", f"/v1/stream/{prefix}{s}", "Content-Type: text/plain\r\n")
        if status not in (200, 201):
            sys.exit(f"PUT answered {status}")
    idle = rss_kb()
    connected, latencies, counts = [], [], [0] * readers
    tasks = []
    for index in range(readers):
        tasks.append(asyncio.create_task(read(index, connected, latencies, counts)))
        if index % 500 == 499:
            await asyncio.sleep(0.05)
    while len(connected) < readers:
        if any(task.done() for task in tasks):
            return next(task for task in tasks if task.done()).result()
        await asyncio.sleep(0.2)
    await asyncio.sleep(1)
    with_readers, descriptors = rss_kb(), len(os.listdir(f"/proc/{pid}/fd"))
    cpu = cpu_seconds()
    sent = await publish(time.monotonic() + seconds)
    await asyncio.sleep(2)
    cpu = cpu_seconds() - cpu
    after = rss_kb()
    for task in tasks:
        task.cancel()
    expected = sent * (readers // streams)
    got = sum(counts)
    latencies.sort()
    p = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] / 1e6 if latencies else float("nan")
    print(f"{readers} readers of {streams} streams, {sent} events in {seconds} s")
    print(f"RSS: idle {idle / 1024:.1f} MB, with readers {with_readers / 1024:.1f} MB ({(with_readers - idle) * 1024 / readers:,.0f} bytes per reader), "
          f"after the events {after / 1024:.1f} MB; descriptors {descriptors}")
    print(f"deliveries {got:,} of {expected:,}; latency p50 {p(0.5):.1f} ms, p99 {p(0.99):.1f} ms; "
          f"daemon CPU {cpu:.2f} s ({cpu * 1e6 / max(got, 1):.1f} µs per delivery)")


asyncio.run(main())
