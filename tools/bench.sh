#!/usr/bin/env bash
# The side-by-side comparison in one command: replay and Redis Streams (appendfsync
# always), same scenarios, same client code path, ratio replay/redis per figure.
#   tools/bench.sh [replay-bench options]      e.g. tools/bench.sh --scale 0.2
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v redis-server >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server
fi
swift build -c release --product replayd
(cd Benchmarks && swift build -c release --product replay-bench)
exec Benchmarks/.build/release/replay-bench --replayd "$PWD/.build/release/replayd" \
  --redis-server "$(command -v redis-server)" "$@"
