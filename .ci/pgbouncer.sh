#!/usr/bin/env bash
# A throwaway PgBouncer in transaction mode in front of a local PostgreSQL, for the end-to-end test
# of several instances (CONTRACT §13).
#
#   .ci/pgbouncer.sh start PORT SERVER_PORT  -> (installs pgbouncer via apt if needed) listens on
#                                              127.0.0.1:PORT for every database of 127.0.0.1:SERVER_PORT;
#                                              prints postgres://postgres@127.0.0.1:PORT as the last line
#   .ci/pgbouncer.sh stop PORT               -> stops it and removes its directory
#
# Debian 12's PgBouncer is 1.18: no protocol-level prepared statements (they came in 1.21), so
# Tandem runs behind it with DATABASE_PREPARED_STATEMENTS=false. It runs as the `postgres` OS user
# when run as root (PgBouncer refuses root).
set -euo pipefail

log() { echo "[pgbouncer.sh] $*" >&2; }
as_root() { if [[ $EUID -eq 0 ]]; then "$@"; else sudo "$@"; fi; }
as_pg() { if [[ $EUID -eq 0 ]]; then (cd /tmp && runuser -u postgres -- "$@"); else (cd /tmp && "$@"); fi; }
binary() { command -v pgbouncer || { [[ -x /usr/sbin/pgbouncer ]] && echo /usr/sbin/pgbouncer; }; }

cmd_start() {
  local port="$1" server="$2" dir="/tmp/tandem-pgbouncer-$1" bin
  if ! bin="$(binary)"; then
    log "pgbouncer not found; installing it via apt"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold pgbouncer >&2
    bin="$(binary)"
  fi
  cmd_stop "$port" 2>/dev/null || true
  mkdir -p "$dir"
  echo '"postgres" ""' >"$dir/userlist.txt"
  # statement_timeout and options are startup parameters 1.18 does not pass on: ignored here, so the
  # statement timeout is the server's (or the role's: ALTER ROLE … SET statement_timeout).
  cat >"$dir/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=$server
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/userlist.txt
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 40
ignore_startup_parameters = extra_float_digits,statement_timeout,options
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
INI
  [[ $EUID -eq 0 ]] && chown -R postgres:postgres "$dir"
  as_pg "$bin" -d -q "$dir/pgbouncer.ini" >&2
  local i
  for ((i = 0; i < 50; i++)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      log "ready on 127.0.0.1:$port ($("$bin" --version | head -n1))"
      echo "postgres://postgres@127.0.0.1:$port"
      return 0
    fi
    sleep 0.1
  done
  log "pgbouncer did not listen; its log:"; cat "$dir/pgbouncer.log" >&2 || true
  exit 1
}

cmd_stop() {
  local dir="/tmp/tandem-pgbouncer-$1" pid
  if [[ -f "$dir/pgbouncer.pid" ]]; then
    pid="$(cat "$dir/pgbouncer.pid")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -rf "$dir"
}

case "${1:-}" in
  start) cmd_start "${2:?port}" "${3:?server port}" ;;
  stop) cmd_stop "${2:?port}" ;;
  *) echo "usage: $0 start PORT SERVER_PORT | stop PORT" >&2; exit 2 ;;
esac
