#!/usr/bin/env bash
# Starts a throwaway PostgreSQL cluster for the tests: initdb in a new temp folder, a
# server on a free loopback port (no Unix socket: nothing to clash with a system
# cluster), one database `replay`. Prints the lines to eval:
#   eval "$(tools/postgres-cluster.sh start)"   # exports REPLAY_TEST_POSTGRES, REPLAY_TEST_POSTGRES_DIR
#   tools/postgres-cluster.sh stop "$REPLAY_TEST_POSTGRES_DIR"
#   tools/postgres-cluster.sh pause DIR / resume DIR   (the server down and up again, data kept)
# initdb refuses to run as root, so as root the cluster belongs to the `postgres` user
# (Debian's postgresql package creates it).
set -euo pipefail

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$bin" ] || { echo "postgres-cluster: PostgreSQL is not installed (apt-get install postgresql)" >&2; exit 1; }

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "${1:-start}" in
start)
  dir=$(mktemp -d /tmp/replay-pg.XXXXXX)
  [ "$(id -u)" = 0 ] && chown postgres "$dir"
  # A free port below the kernel's ephemeral range: a port the kernel hands out (another
  # test's bind to port 0, or an outgoing connection's local port) could take it while a
  # paused server is down, and `resume` must get the same one back.
  port=$(python3 - <<'PY'
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for port in random.sample(range(min(low, 32768) - 12000, min(low, 32768)), 200):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port)); print(port); break
        except OSError:
            pass
PY
)
  [ -n "$port" ] || { echo "postgres-cluster: no free port below the ephemeral range" >&2; exit 1; }
  as_owner "$bin/initdb" -D "$dir/data" -U replay --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; exit 1; }
  # fsync and synchronous_commit stay on: the tests check acknowledged-after-commit.
  # max_connections: the tests run in parallel and each store holds up to seven
  # connections (writer, source, listener, four readers); 2 cores peak at about 165, and
  # a machine with more cores runs more suites at once.
  echo "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories='' -c max_connections=1000" >"$dir/options"
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 -o "$(cat "$dir/options")" start >/dev/null \
    || { cat "$dir/server.log" >&2; exit 1; }
  as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U replay replay
  echo "export REPLAY_TEST_POSTGRES=postgres://replay@127.0.0.1:$port/replay"
  echo "export REPLAY_TEST_POSTGRES_DIR=$dir"
  ;;
stop)
  dir=${2:?usage: postgres-cluster.sh stop DIR}
  as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
  rm -rf "$dir"
  ;;
pause)
  dir=${2:?usage: postgres-cluster.sh pause DIR}
  as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
  ;;
resume)
  dir=${2:?usage: postgres-cluster.sh resume DIR}
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 -o "$(cat "$dir/options")" start >/dev/null \
    || { cat "$dir/server.log" >&2; exit 1; }
  ;;
*) echo "usage: postgres-cluster.sh start | stop DIR | pause DIR | resume DIR" >&2; exit 2 ;;
esac
