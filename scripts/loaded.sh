#!/usr/bin/env bash
# loaded.sh: run a command on a loaded machine, to reproduce a test that
# flakes under load (issue 35: two cores, other Redis-heavy tests beside).
#
#   scripts/loaded.sh CMD [ARG]...
#   e.g. scripts/loaded.sh go test -race -count=1 -run Failover ./redlock/
#
# It starts one CPU hog (a shell busy loop) per core but one, at least one
# (LOADED_HOGS overrides the count), runs CMD in the foreground, and exits
# with CMD's status. The hogs are this script's own children and are killed
# by their process ids when it ends: CMD's exit, its failure, or an
# interrupt (INT, TERM, HUP). `uptime` is printed before and after, so a
# run's report says how loaded the machine was.
set -euo pipefail

(($#)) || { echo "usage: scripts/loaded.sh CMD [ARG]..." >&2 && exit 2; }

n=${LOADED_HOGS:-$(($(nproc) - 1))}
((n >= 1)) || n=1

hogs=()
stop() {
  local pid
  for pid in "${hogs[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${hogs[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  hogs=()
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# A hog also ends on its own once this script is gone (killed with SIGKILL,
# where no trap runs): it checks for its parent every 100000 turns.
parent=$$
for ((i = 0; i < n; i++)); do
  (while kill -0 "$parent" 2>/dev/null; do for ((j = 0; j < 100000; j++)); do :; done; done) &
  hogs+=($!)
done
echo "loaded.sh: $n CPU hog(s) on $(nproc) core(s): ${hogs[*]}; $(uptime)" >&2

status=0
start=$SECONDS
"$@" || status=$?
echo "loaded.sh: exit $status after $((SECONDS - start))s; $(uptime)" >&2
exit "$status"
