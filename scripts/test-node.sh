#!/bin/sh
# The `node` that tap's runner starts each test file with in `npm test` (scripts/test-runner.mjs):
# node itself ($TANDEM_TEST_NODE), with tap's flags and NODE_OPTIONS less its process tracker and
# --enable-source-maps (the build has no source maps, and reading tap's own costs every test CPU).
# exec keeps the process tap started: its signals, its timeout's SIGKILL and its IPC channel (a test
# asking for a longer timeout, tap timing one out) reach the test itself.
set -f
for arg do
  shift
  case $arg in
    *@tapjs/processinfo*|--enable-source-maps) ;;
    *) set -- "$@" "$arg" ;;
  esac
done
# Should the tracker be in NODE_OPTIONS too (tap takes it out when it is among the flags), out it goes.
case $NODE_OPTIONS in
  *@tapjs/processinfo*)
    options=
    for option in $NODE_OPTIONS; do
      case $option in
        *@tapjs/processinfo*) ;;
        *) options="$options $option" ;;
      esac
    done
    NODE_OPTIONS=${options# }
    export NODE_OPTIONS
    ;;
esac
exec "$TANDEM_TEST_NODE" "$@"
