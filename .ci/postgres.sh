#!/usr/bin/env bash
# Throwaway PostgreSQL server for CI.
#
#   .ci/postgres.sh start   -> (installs postgresql via apt if needed), initdb in
#                              /tmp/tandem-pg-$PORT, starts it on 127.0.0.1:$PORT and
#                              prints postgres://postgres@127.0.0.1:$PORT/postgres
#                              as the last line on stdout (everything else: stderr)
#   .ci/postgres.sh stop    -> stops it and removes the data directory
#
# PORT is ${PGPORT:-54329}. PostgreSQL refuses to run as root, so when run as root
# the server runs as the `postgres` OS user.
set -euo pipefail

PORT="${PGPORT:-54329}"
DATA="/tmp/tandem-pg-${PORT}"
LOG="/tmp/tandem-pg-${PORT}.log"
SOCKDIR=/tmp
export TZ=UTC

log() { echo "[postgres.sh] $*" >&2; }

find_bindir() {
  if [[ -x /usr/lib/postgresql/15/bin/initdb ]]; then
    echo /usr/lib/postgresql/15/bin
    return 0
  fi
  # any other installed major version (highest first)
  local d
  d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -V -r | head -n1 || true)"
  if [[ -n "$d" && -x "$d/initdb" ]]; then
    echo "$d"
    return 0
  fi
  return 1
}

as_root() {
  if [[ $EUID -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

# Run a command as the postgres OS user (or as ourselves when not root).
as_pg() {
  if [[ $EUID -eq 0 ]]; then
    (cd /tmp && runuser -u postgres -- env TZ=UTC "$@")
  else
    (cd /tmp && env TZ=UTC "$@")
  fi
}

install_pg() {
  log "initdb not found; installing postgresql via apt"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    postgresql >&2
  # apt may have created (and, where services can start, started) the Debian
  # "main" cluster on 5432; it does not conflict with our port.
}

stop_server() {
  local bindir="$1"
  if [[ -f "$DATA/postmaster.pid" ]]; then
    log "stopping server in $DATA"
    as_pg "$bindir/pg_ctl" -D "$DATA" -m fast -w -t 30 stop >&2 \
      || as_pg "$bindir/pg_ctl" -D "$DATA" -m immediate -w -t 30 stop >&2 \
      || true
  fi
}

cmd_start() {
  local bindir
  if ! bindir="$(find_bindir)"; then
    install_pg
    bindir="$(find_bindir)" || { log "initdb still missing after apt-get install"; exit 1; }
  fi
  log "using $bindir"

  # idempotent: stop a previous instance of ours on this port
  stop_server "$bindir"
  if "$bindir/pg_isready" -q -h 127.0.0.1 -p "$PORT" -t 2; then
    log "something else already listens on 127.0.0.1:$PORT; refusing to start"
    exit 1
  fi

  rm -rf "$DATA" "$LOG"
  mkdir -p "$DATA"
  chmod 700 "$DATA"
  touch "$LOG"
  if [[ $EUID -eq 0 ]]; then
    chown postgres:postgres "$DATA" "$LOG"
  fi

  log "initdb $DATA"
  as_pg "$bindir/initdb" -D "$DATA" --auth=trust -U postgres \
    --encoding=UTF8 --locale=C --no-sync >"$LOG.initdb" 2>&1 || {
      cat "$LOG.initdb" >&2; exit 1; }

  log "starting on 127.0.0.1:$PORT"
  if ! as_pg "$bindir/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 \
      -o "-h 127.0.0.1 -p $PORT -k $SOCKDIR -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 -c timezone=UTC" \
      start >&2; then
    log "pg_ctl start failed; server log:"
    cat "$LOG" >&2 || true
    exit 1
  fi

  local i
  for ((i = 0; i < 60; i++)); do
    if "$bindir/pg_isready" -q -h 127.0.0.1 -p "$PORT" -U postgres -t 2; then
      log "ready"
      echo "postgres://postgres@127.0.0.1:${PORT}/postgres"
      return 0
    fi
    sleep 1
  done
  log "server did not become ready; server log:"
  cat "$LOG" >&2 || true
  exit 1
}

cmd_stop() {
  local bindir
  if bindir="$(find_bindir)"; then
    stop_server "$bindir"
  fi
  rm -rf "$DATA" "$LOG.initdb"
  log "stopped"
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
