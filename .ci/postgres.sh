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
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PORT="${PGPORT:-54329}"
DATA="/tmp/tandem-pg-${PORT}"
LOG="/tmp/tandem-pg-${PORT}.log"
SOCKDIR=/tmp
export TZ=UTC

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
  if ! bindir="$(pg_bindir)"; then
    # apt may create (and, where services can start, start) the Debian "main" cluster on 5432; it
    # does not conflict with our port.
    log "initdb not found; installing postgresql via apt"
    apt_install postgresql
    bindir="$(pg_bindir)" || { log "initdb still missing after apt-get install"; exit 1; }
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

  if ! wait_until 60 1 "$bindir/pg_isready" -q -h 127.0.0.1 -p "$PORT" -U postgres -t 2; then
    log "server did not become ready; server log:"
    cat "$LOG" >&2 || true
    exit 1
  fi
  log "ready"
  echo "postgres://postgres@127.0.0.1:${PORT}/postgres"
}

cmd_stop() {
  local bindir
  if bindir="$(pg_bindir)"; then
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
