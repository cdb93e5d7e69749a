#!/usr/bin/env bash
# A throwaway primary and its streaming replica, for the tests of read replicas (CONTRACT §13).
#
#   .ci/replica.sh start           -> a primary on 127.0.0.1:$PRIMARY_PORT (.ci/postgres.sh), then a
#                                     standby made from it with pg_basebackup on $REPLICA_PORT; prints
#                                     the two URLs, primary then replica, as the last two lines on stdout
#   .ci/replica.sh stop-replica    -> stops the standby (fast), keeping its data directory
#   .ci/replica.sh start-replica   -> starts it again; it catches up by streaming
#   .ci/replica.sh stop            -> stops both and removes their data directories
#   .ci/replica.sh standby         -> only the standby, of a server already running on
#                                     $PRIMARY_HOST:$PRIMARY_PORT as $PRIMARY_USER (npm run bench's);
#                                     prints the replica's URL as the last line on stdout
#   .ci/replica.sh remove-standby  -> stops the standby and removes its data directory; never
#                                     touches the primary
#
# PRIMARY_PORT is ${PRIMARY_PORT:-54339}, REPLICA_PORT ${REPLICA_PORT:-54340}, PRIMARY_HOST
# ${PRIMARY_HOST:-127.0.0.1}, PRIMARY_USER ${PRIMARY_USER:-postgres} (a password in PGPASSWORD). As
# .ci/postgres.sh, the servers run as the `postgres` OS user when run as root (PostgreSQL refuses root).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/lib.sh"
PRIMARY_PORT="${PRIMARY_PORT:-54339}"
REPLICA_PORT="${REPLICA_PORT:-54340}"
PRIMARY_HOST="${PRIMARY_HOST:-127.0.0.1}"
PRIMARY_USER="${PRIMARY_USER:-postgres}"
DATA="/tmp/tandem-replica-${REPLICA_PORT}"
LOG="/tmp/tandem-replica-${REPLICA_PORT}.log"
export TZ=UTC

# The primary's settings (as .ci/postgres.sh starts it), which a standby must match or exceed.
replica_options() {
  echo "-h 127.0.0.1 -p $REPLICA_PORT -k /tmp -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 -c timezone=UTC"
}

start_replica() {
  local bin
  bin="$(pg_bindir)"
  as_pg "$bin/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 -o "$(replica_options)" start >&2 || {
    log "the standby did not start; its log:"; cat "$LOG" >&2 || true; exit 1; }
}

stop_replica() {
  local bin
  bin="$(pg_bindir)"
  if [[ -f "$DATA/postmaster.pid" ]]; then
    as_pg "$bin/pg_ctl" -D "$DATA" -m fast -w -t 30 stop >&2 \
      || as_pg "$bin/pg_ctl" -D "$DATA" -m immediate -w -t 30 stop >&2 || true
  fi
}

# A standby of the primary on $PRIMARY_HOST:$PRIMARY_PORT, started; prints its URL.
make_standby() {
  local bin
  bin="$(pg_bindir)" || true
  command -v "$bin/pg_basebackup" >/dev/null || { log "no pg_basebackup in $bin (apt-get install postgresql)"; exit 1; }
  stop_replica
  rm -rf "$DATA" "$LOG"
  mkdir -p "$DATA"
  chmod 700 "$DATA"
  touch "$LOG"
  [[ $EUID -eq 0 ]] && chown postgres:postgres "$DATA" "$LOG"
  # initdb's pg_hba.conf (--auth=trust) lets 127.0.0.1 connect for replication; wal_level is
  # `replica` and max_wal_senders 10 by default. -R writes standby.signal and primary_conninfo;
  # -c fast: a spread checkpoint of a server that has just been loaded can take minutes.
  log "pg_basebackup from $PRIMARY_HOST:$PRIMARY_PORT into $DATA"
  as_pg "$bin/pg_basebackup" -h "$PRIMARY_HOST" -p "$PRIMARY_PORT" -U "$PRIMARY_USER" -D "$DATA" -R -X stream -c fast --no-sync >&2
  log "starting the standby on 127.0.0.1:$REPLICA_PORT"
  start_replica
  echo "postgres://${PRIMARY_USER}@127.0.0.1:${REPLICA_PORT}/postgres"
}

cmd_start() {
  local primary
  primary="$(PGPORT="$PRIMARY_PORT" "$HERE/postgres.sh" start | tail -n1)"
  echo "$primary"
  make_standby
}

cmd_stop() {
  stop_replica
  rm -rf "$DATA" "$LOG"
  PGPORT="$PRIMARY_PORT" "$HERE/postgres.sh" stop >/dev/null 2>&1 || true
  log "stopped"
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  standby) make_standby ;;
  remove-standby) stop_replica; rm -rf "$DATA" "$LOG" ;;
  stop-replica) stop_replica ;;
  start-replica) start_replica ;;
  *) echo "usage: $0 start|stop|stop-replica|start-replica|standby|remove-standby" >&2; exit 2 ;;
esac
