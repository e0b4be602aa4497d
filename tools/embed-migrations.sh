#!/usr/bin/env bash
# Writes OUTPUT, the Swift source that embeds migrations/*.sql (SQLite) and
# migrations/postgres/*.sql (PostgreSQL) in ReplayStore. The build runs it (the
# EmbedMigrations plugin, Plugins/); migrations/ is the only copy of the schema.
#   tools/embed-migrations.sh OUTPUT
set -euo pipefail
out=${1:?usage: embed-migrations.sh OUTPUT}
cd "$(dirname "$0")/.."
embed() {
  local what=$1 array=$2
  shift 2
  echo "    /// The $what, in order: (file name without .sql, SQL text)."
  echo "    static let $array: [(identifier: String, sql: String)] = ["
  for f in "$@"; do
    name=$(basename "$f" .sql)
    if grep -q '"""#' "$f"; then echo "error: $f contains the raw-string delimiter" >&2; exit 1; fi
    printf '        ("%s", #"""\n' "$name"
    cat "$f"
    printf '"""#),\n'
  done
  echo "    ]"
}
{
  echo "// Generated at build time by tools/embed-migrations.sh from migrations/*.sql."
  echo
  echo "extension Migrations {"
  embed "SQL files of migrations/" embedded migrations/*.sql
  echo
  embed "PostgreSQL SQL files of migrations/postgres/" embeddedPostgres migrations/postgres/*.sql
  echo "}"
} > "$out.tmp"
mv "$out.tmp" "$out"
