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

PORT="${REDIS_PORT:-63799}"
PIDFILE="/tmp/tandem-redis-${PORT}.pid"
LOG="/tmp/tandem-redis-${PORT}.log"

log() { echo "[redis.sh] $*" >&2; }

as_root() {
  if [[ $EUID -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

# alive = exists and is not a zombie (containers may lack an init that reaps)
alive() {
  local st
  st="$(ps -o stat= -p "$1" 2>/dev/null || true)"
  [[ -n "$st" && "$st" != Z* ]]
}

ping() {
  [[ "$(redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null || true)" == "PONG" ]]
}

install_redis() {
  log "redis-server not found; installing via apt"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    redis-server redis-tools >&2
  # apt's own service (if it could start one) listens on 6379: no conflict.
}

stop_server() {
  if command -v redis-cli >/dev/null 2>&1 && ping; then
    log "shutting down redis on 127.0.0.1:$PORT"
    redis-cli -h 127.0.0.1 -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
  fi
  # make sure our daemon is gone (by its pid file only)
  if [[ -f "$PIDFILE" ]]; then
    local pid i
    pid="$(cat "$PIDFILE" 2>/dev/null || true)"
    if [[ -n "$pid" ]]; then
      for ((i = 0; i < 50; i++)); do
        alive "$pid" || break
        sleep 0.1
      done
      if alive "$pid"; then kill -9 "$pid" 2>/dev/null || true; fi
    fi
    rm -f "$PIDFILE"
  fi
}

cmd_start() {
  if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
    install_redis
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

  local i
  for ((i = 0; i < 100; i++)); do
    if ping; then
      log "ready"
      echo "redis://127.0.0.1:${PORT}"
      return 0
    fi
    sleep 0.2
  done
  log "redis did not answer PING; log:"
  cat "$LOG" >&2 || true
  exit 1
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
