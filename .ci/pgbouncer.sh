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
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cmd_start() {
  local port="$1" server="$2" dir="/tmp/tandem-pgbouncer-$1" bin
  bin="$(need_binary pgbouncer pgbouncer)"
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
  if ! wait_until 50 0.1 tcp_listening "$port"; then
    log "pgbouncer did not listen; its log:"; cat "$dir/pgbouncer.log" >&2 || true
    exit 1
  fi
  log "ready on 127.0.0.1:$port ($("$bin" --version | head -n1))"
  echo "postgres://postgres@127.0.0.1:$port"
}

cmd_stop() {
  local dir="/tmp/tandem-pgbouncer-$1"
  stop_pidfile "$dir/pgbouncer.pid"
  rm -rf "$dir"
}

case "${1:-}" in
  start) cmd_start "${2:?port}" "${3:?server port}" ;;
  stop) cmd_stop "${2:?port}" ;;
  *) echo "usage: $0 start PORT SERVER_PORT | stop PORT" >&2; exit 2 ;;
esac
