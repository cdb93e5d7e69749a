# What the .ci scripts that start and stop a throwaway service share (postgres.sh, replica.sh,
# redis.sh, pgbouncer.sh, nginx.sh): sourced, never run. Every function writes to stderr only: a
# script's stdout is its result (a URL as the last line) and nothing else.
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The script's name in its log lines: [postgres.sh] ready
CI_NAME="$(basename "$0")"

log() { echo "[$CI_NAME] $*" >&2; }

as_root() { if [[ $EUID -eq 0 ]]; then "$@"; else sudo "$@"; fi; }

# Runs a command as the `postgres` OS user when we are root (PostgreSQL and PgBouncer refuse root),
# from /tmp (a directory that user may enter), in UTC.
as_pg() {
  if [[ $EUID -eq 0 ]]; then
    (cd /tmp && runuser -u postgres -- env TZ=UTC "$@")
  else
    (cd /tmp && env TZ=UTC "$@")
  fi
}

# Installs Debian packages quietly, keeping any configuration file already there.
apt_install() {
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "$@" >&2
}

# Prints the path of NAME (on PATH, or /usr/sbin/NAME: Debian puts daemons there, off a user's PATH),
# installing PACKAGE via apt first when it is missing.
#   bin="$(need_binary pgbouncer pgbouncer)"
need_binary() {
  local package="$1" name="$2"
  find_binary "$name" && return 0
  log "$name not found; installing $package via apt"
  apt_install "$package"
  find_binary "$name" || { log "$name still missing after apt-get install $package"; return 1; }
}

find_binary() { command -v "$1" || { [[ -x "/usr/sbin/$1" ]] && echo "/usr/sbin/$1"; }; }

# PostgreSQL's bin directory: 15's (the version CI targets), else the highest installed; fails when
# there is none.
pg_bindir() {
  if [[ -x /usr/lib/postgresql/15/bin/initdb ]]; then echo /usr/lib/postgresql/15/bin; return 0; fi
  local dir
  dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -V -r | head -n1 || true)"
  [[ -n "$dir" && -x "$dir/initdb" ]] && echo "$dir"
}

# True while process PID runs; a zombie (a container without an init may leave one unreaped) is gone.
alive() {
  local st
  st="$(ps -o stat= -p "$1" 2>/dev/null || true)"
  [[ -n "$st" && "$st" != Z* ]]
}

# Runs CMD... up to TRIES times, SECONDS apart, until it succeeds; fails if it never does.
#   wait_until 50 0.1 tcp_listening 6432
wait_until() {
  local tries="$1" seconds="$2" i
  shift 2
  for ((i = 0; i < tries; i++)); do
    "$@" && return 0
    sleep "$seconds"
  done
  return 1
}

gone() { ! alive "$1"; }

tcp_listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Stops the daemon whose pid PIDFILE holds, if there is one: SIGTERM, then up to 5 s for it to go.
# With --asked, the daemon was already told to stop its own way (redis-cli shutdown): no SIGTERM, and
# a SIGKILL if it is still there after the 5 s. Never touches a process it was not given.
stop_pidfile() {
  local pidfile="$1" asked="${2:-}" pid
  [[ -f "$pidfile" ]] || return 0
  pid="$(cat "$pidfile" 2>/dev/null || true)"
  [[ -n "$pid" ]] || return 0
  if [[ "$asked" == --asked ]]; then
    wait_until 50 0.1 gone "$pid" || kill -9 "$pid" 2>/dev/null || true
  else
    kill "$pid" 2>/dev/null || true
    wait_until 50 0.1 gone "$pid" || true
  fi
}
