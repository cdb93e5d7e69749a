#!/usr/bin/env bash
# Throwaway Redis server for CI.
#
#   .ci/redis.sh start   -> (installs redis-server via apt if needed), starts it on
#                           127.0.0.1:$PORT without persistence and prints
#                           redis://127.0.0.1:$PORT as the last line on stdout
#                           (everything else: stderr)
#   .ci/redis.sh stop    -> shuts it down
#
# PORT is ${REDIS_PORT:-63799}.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PORT="${REDIS_PORT:-63799}"
PIDFILE="/tmp/tandem-redis-${PORT}.pid"
LOG="/tmp/tandem-redis-${PORT}.log"

ping() {
  [[ "$(redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null || true)" == "PONG" ]]
}

stop_server() {
  if command -v redis-cli >/dev/null 2>&1 && ping; then
    log "shutting down redis on 127.0.0.1:$PORT"
    redis-cli -h 127.0.0.1 -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
  fi
  # make sure our daemon is gone (by its pid file only)
  stop_pidfile "$PIDFILE" --asked
  rm -f "$PIDFILE"
}

cmd_start() {
  if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
    # apt's own service (if it could start one) listens on 6379: no conflict.
    log "redis-server not found; installing via apt"
    apt_install redis-server redis-tools
  fi
  stop_server
  if ping; then
    log "something still answers on 127.0.0.1:$PORT; refusing to start"
    exit 1
  fi
  rm -f "$LOG"
  log "starting on 127.0.0.1:$PORT"
  redis-server --port "$PORT" --bind 127.0.0.1 --daemonize yes \
    --save '' --appendonly no --dir /tmp \
    --pidfile "$PIDFILE" --logfile "$LOG" >&2

  if ! wait_until 100 0.2 ping; then
    log "redis did not answer PING; log:"
    cat "$LOG" >&2 || true
    exit 1
  fi
  log "ready"
  echo "redis://127.0.0.1:${PORT}"
}

cmd_stop() {
  stop_server
  log "stopped"
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
