#!/usr/bin/env bash
# A throwaway nginx in front of several Tandem instances, for the end-to-end test (CONTRACT §13):
# round robin, X-Forwarded-For appended, WebSockets upgraded, a GET retried on the next instance
# when one refuses the connection or answers 502/503 (a rolling restart).
#
#   .ci/nginx.sh start PORT UPSTREAM_PORT...  -> (installs nginx via apt if needed) listens on
#                                               127.0.0.1:PORT; prints http://127.0.0.1:PORT last
#   .ci/nginx.sh stop PORT                    -> stops it and removes its directory
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cmd_start() {
  local port="$1" dir="/tmp/tandem-nginx-$1" bin servers="" upstream
  shift
  bin="$(need_binary nginx nginx)"
  cmd_stop "$port" 2>/dev/null || true
  mkdir -p "$dir"
  for upstream in "$@"; do servers+="    server 127.0.0.1:$upstream max_fails=1 fail_timeout=2s;"$'\n'; done
  cat >"$dir/nginx.conf" <<CONF
daemon on;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $dir/body;
  proxy_temp_path $dir/proxy;
  fastcgi_temp_path $dir/fastcgi;
  uwsgi_temp_path $dir/uwsgi;
  scgi_temp_path $dir/scgi;
  map \$http_upgrade \$connection_upgrade { default upgrade; '' ''; }
  upstream tandem {
$servers    keepalive 32;
  }
  server {
    listen 127.0.0.1:$port;
    location / {
      proxy_pass http://tandem;
      proxy_http_version 1.1;
      proxy_set_header Host \$host;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_set_header Upgrade \$http_upgrade;
      proxy_set_header Connection \$connection_upgrade;
      # A request the instance did not take (connection refused or reset, a 503 while it drains) goes
      # to the next one; POST, PATCH and DELETE are never sent twice (no non_idempotent).
      proxy_next_upstream error timeout http_502 http_503;
      proxy_read_timeout 3600s;
    }
  }
}
CONF
  "$bin" -p "$dir" -c "$dir/nginx.conf" >&2
  log "ready on 127.0.0.1:$port in front of $*"
  echo "http://127.0.0.1:$port"
}

cmd_stop() {
  local dir="/tmp/tandem-nginx-$1"
  stop_pidfile "$dir/nginx.pid"
  rm -rf "$dir"
}

case "${1:-}" in
  start) [[ $# -ge 3 ]] || { echo "usage: $0 start PORT UPSTREAM_PORT..." >&2; exit 2; }; shift; cmd_start "$@" ;;
  stop) cmd_stop "${2:?port}" ;;
  *) echo "usage: $0 start PORT UPSTREAM_PORT... | stop PORT" >&2; exit 2 ;;
esac
