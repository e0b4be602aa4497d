#!/usr/bin/env python3
"""Each async function's frame size, read from a binary: what one call of it allocates in
its task (the second word of its async function pointer, the `...Tu` symbol).

A connection's task keeps the slabs of its deepest call for as long as it lives, so the
frames on the path to a parked reader are paid once per reader (docs/ARCHITECTURE.md, the
HTTP door); `tools/task_slabs.c` counts the slabs themselves.

usage: tools/async_frames.py BINARY [SUBSTRING] [COUNT=40]
  e.g. tools/async_frames.py .build/release/replayd SSEReader
"""
import struct
import subprocess
import sys

binary = sys.argv[1]
needle = (sys.argv[2] if len(sys.argv) > 2 else "").lower()
count = int(sys.argv[3]) if len(sys.argv) > 3 else 40

segments = []
for line in subprocess.run(["readelf", "-lW", binary], capture_output=True, text=True, check=True).stdout.splitlines():
    fields = line.split()
    if fields and fields[0] == "LOAD":
        segments.append((int(fields[2], 16), int(fields[1], 16), int(fields[4], 16)))
data = open(binary, "rb").read()


def word_pair(address):
    for start, offset, size in segments:
        if start <= address < start + size:
            return struct.unpack("<iI", data[offset + address - start : offset + address - start + 8])
    return None


symbols = []
for line in subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True).stdout.splitlines():
    fields = line.split()
    if len(fields) == 3 and fields[2].endswith("Tu"):
        symbols.append((int(fields[0], 16), fields[2]))
names = subprocess.run(
    ["swift", "demangle", "--simplified", "--compact"], input="\n".join(name for _, name in symbols), capture_output=True, text=True
).stdout.splitlines()

rows = []
for (address, _), name in zip(symbols, names):
    pair = word_pair(address)
    if pair and needle in name.lower():
        rows.append((pair[1], name.removeprefix("async function pointer to ")))
for size, name in sorted(rows, reverse=True)[:count]:
    print(f"{size:7,} {name}")
