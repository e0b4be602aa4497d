#!/usr/bin/env bash
# Builds the release daemon and soaks it: tools/soak.sh [MINUTES] (default 10).
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product replayd
exec python3 tools/soak.py --replayd .build/release/replayd --minutes "${1:-10}"
