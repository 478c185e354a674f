#!/usr/bin/env bash
# Model-check docs/model/redlock.pml and docs/model/handoff.pml in every
# configuration (see docs/model.md).
#
#   docs/model/run.sh                  run all checks; exit 1 if any verdict is wrong
#   docs/model/run.sh --update-trails  also rewrite docs/model/trails/ from this run
#   docs/model/run.sh NAME...          run only the named configurations
#
# Everything is built in a temporary directory, which is removed afterwards
# (MODEL_KEEP=1 keeps it).  MODEL_JOBS sets the number of parallel runs
# (default: number of CPUs).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# MODEL_PML, MODEL_HANDOFF_PML: check another copy (for testing the checks)
model_src() {
  case $1 in
    redlock.pml) echo "${MODEL_PML:-$here/redlock.pml}" ;;
    handoff.pml) echo "${MODEL_HANDOFF_PML:-$here/handoff.pml}" ;;
    *) echo "$here/$1" ;;
  esac
}
trails=$here/trails
update=0
only=()
for arg in "$@"; do
  case $arg in
    --update-trails) update=1 ;;
    -*) echo "unknown option $arg" >&2; exit 2 ;;
    *) only+=("$arg") ;;
  esac
done

command -v spin >/dev/null || { echo "spin not found (apt-get install spin)" >&2; exit 2; }
CC=${CC:-gcc}
command -v "$CC" >/dev/null || CC=cc
jobs=${MODEL_JOBS:-$(nproc 2>/dev/null || echo 2)}
work=$(mktemp -d "${TMPDIR:-/tmp}/redlock-model.XXXXXX")
if [ "${MODEL_KEEP:-0}" = 1 ]; then echo "work dir: $work"; else trap 'rm -rf "$work"' EXIT; fi

# name | expected verdict | spin -D switches | pan compile flags | pan run flags [| model]
#   expected: "ok" (no error: assertions hold, or the LTL property holds under
#   weak fairness), "mutex", "fence" or "claim" (a counterexample violating
#   that property), "livelock" (an acceptance cycle against the LTL property)
#   model: the Promela file, redlock.pml unless given
configs=(
  # fence order after an arbitrary history of handouts: counters start at every order type the
  # two-phase invariant allows (naive fencing passes from zero counters; its counterexample needs three handouts)
  "safe-fence-history|ok|-DSYMM -DGENCTR=1 -DTTL=2 -DLOSS=0|-O2 -DSAFETY|-m20000 -w23"
  # mutual exclusion and fence order under arbitrary delay, reordering, lost requests and replies,
  # timeouts at any moment, late SETs, and node clocks fast at the drift bound
  "safe-core|ok|-DSYMM|-O2 -DSAFETY|-m20000 -w22"
  # one crash, restarted at once with appendfsync always: it loses only requests sent while down
  "safe-crash-aof|ok|-DSYMM -DMAXCRASH=1 -DFENCE=0|-O2 -DSAFETY|-m20000 -w20"
  # one crash without persistence, down longer than a TTL: a delayed restart cures (a) (not fences: d)
  "safe-crash-delay|ok|-DSYMM -DMAXCRASH=1 -DPERSIST=0 -DDELAY=1 -DFENCE=0|-O2 -DSAFETY|-m20000 -w20"
  # (a)'s crash with the client's quarantine of TTL + DRIFT, counted on a fast uptime clock:
  # a node that does not count is as good as one that is down (QUAR=3 verifies too, QUAR=2 does not)
  "safe-crash-quarantine|ok|-DSYMM -DMAXCRASH=1 -DPERSIST=0 -DDELAY=0 -DQUAR=4 -DFENCE=0 -DLOSS=0|-O2 -DSAFETY|-m20000 -w22"
  # the quarantine ended early by the horizon (CEIL), read at any moment after the settle time
  # (a decision window of one tick), with an extension; fencing off because counters are lost anyway (d')
  "safe-crash-ceiling|ok|-DSYMM -DMAXCRASH=1 -DPERSIST=0 -DDELAY=0 -DQUAR=5 -DCEIL=1 -DWIN=1 -DMAXEXT=1 -DMAXEXT1=0 -DFENCE=0 -DLOSS=0 -DPRUNE=1|-O2 -DSAFETY|-m20000 -w21"
  # the same with a rolling restart: two crashes, the second node's horizon resting on the first's return
  "safe-crash-ceiling-rolling|ok|-DSYMM -DMAXCRASH=2 -DROLLING=1 -DPERSIST=0 -DDELAY=0 -DQUAR=5 -DCEIL=1 -DWIN=1 -DMAXEXT=1 -DMAXEXT1=0 -DFENCE=0 -DLOSS=0 -DPRUNE=1|-O2 -DSAFETY|-m20000 -w22"
  # A's decision window the longest allowed (WIN=2), B's shorter: the read waits for the longest
  "safe-crash-ceiling-slow-client|ok|-DSYMM -DMAXCRASH=1 -DPERSIST=0 -DDELAY=0 -DQUAR=5 -DCEIL=1 -DWIN=2 -DWIN1=1 -DMAXEXT=1 -DMAXEXT1=0 -DFENCE=0 -DLOSS=0 -DPRUNE=1|-O2 -DSAFETY|-m20000 -w21"
  # one extension by A, including extensions that time out, are refused, or land after the old validity
  "safe-extend|ok|-DSYMM -DMAXEXT=1 -DMAXEXT1=0 -DFENCE=0|-O2 -DSAFETY|-m20000 -w20"
  # liveness under weak fairness: after a release some acquisition succeeds (no loss, no crash, jitter as BACKOFF=2)
  "live|ok|-DLIVE=1|-O2 -DNFAIR=4|-a -f -m100000 -w18"
  # retrying at once (BACKOFF=0): two clients' rounds alternate for ever, a livelock
  "live-no-jitter|livelock|-DLIVE=1 -DBACKOFF=0|-O0 -DNFAIR=4|-a -f -m100000 -w18"
  # (a) a crash without persistence, back at once, no quarantine: two holders
  "unsafe-a-no-persist|mutex|-DMAXCRASH=1 -DPERSIST=0 -DDELAY=0 -DFENCE=0 -DLOSS=0|-O2 -DSAFETY|-m10000 -w20"
  # (a') a quarantine shorter than the TTL (QUAR=2): two holders again
  "unsafe-a-short-quarantine|mutex|-DMAXCRASH=1 -DPERSIST=0 -DDELAY=0 -DQUAR=2 -DFENCE=0 -DLOSS=0|-O2 -DSAFETY|-m10000 -w20"
  # (a'') the horizon read at once after the restart (no window): an acquisition in flight across the
  # restart completes with the forgotten yes after the read
  "unsafe-a-ceiling-in-flight|mutex|-DMAXCRASH=1 -DPERSIST=0 -DDELAY=0 -DQUAR=5 -DCEIL=1 -DFENCE=0 -DLOSS=0 -DPRUNE=1|-O0 -DSAFETY|-m10000 -w20"
  # (a'') the horizon read from one other node, which may miss the lock's majority
  "unsafe-a-ceiling-minority|mutex|-DMAXCRASH=1 -DPERSIST=0 -DDELAY=0 -DQUAR=5 -DCEIL=1 -DWIN=1 -DCEIL_MINORITY=1 -DFENCE=0 -DLOSS=0 -DPRUNE=1|-O0 -DSAFETY|-m10000 -w20"
  # (a'') a granted SET that does not raise the ceiling
  "unsafe-a-ceiling-no-raise|mutex|-DMAXCRASH=1 -DPERSIST=0 -DDELAY=0 -DQUAR=5 -DCEIL=1 -DWIN=1 -DCEIL_NORAISE=1 -DFENCE=0 -DLOSS=0 -DPRUNE=1|-O0 -DSAFETY|-m10000 -w20"
  # (a'') an extension that does not raise the ceiling
  "unsafe-a-ceiling-no-raise-ext|mutex|-DMAXCRASH=1 -DPERSIST=0 -DDELAY=0 -DQUAR=5 -DCEIL=1 -DWIN=1 -DCEIL_NORAISE=2 -DMAXEXT=0 -DMAXEXT1=1 -DFENCE=0 -DLOSS=0 -DPRUNE=1|-O0 -DSAFETY|-m10000 -w20"
  # (a'') the read waits for the reader's own window only, shorter than another client's
  "unsafe-a-ceiling-own-settle|mutex|-DMAXCRASH=1 -DPERSIST=0 -DDELAY=0 -DQUAR=5 -DCEIL=1 -DWIN=2 -DWIN1=1 -DSETTLE_OWN=1 -DFENCE=0 -DLOSS=0 -DPRUNE=1|-O0 -DSAFETY|-m10000 -w20"
  # (b) node clocks drift beyond the allowance (DRIFT_BOUND=2 > DRIFT=1): keys expire under a holder
  "unsafe-b-drift|mutex|-DDRIFT_BOUND=2 -DFENCE=0 -DLOSS=0|-O0 -DSAFETY|-m10000 -w20"
  # (c) fence = max of INCRs over the quorum, no write-back: a fence handed out twice
  "unsafe-c-naive-fence|fence|-DFENCE=2 -DMAXATT=2 -DTTL=2 -DLOSS=0|-O2 -DSAFETY|-m10000 -w20"
  # (d) a delayed restart without persistence: the lock is safe, the fence counter is forgotten
  "unsafe-d-delay-no-persist|fence|-DMAXCRASH=1 -DPERSIST=0 -DDELAY=1 -DLOSS=0|-O0 -DSAFETY|-m10000 -w20"
  # (d') the same under the quarantine: counters have no TTL to wait out
  "unsafe-d-quarantine-no-persist|fence|-DMAXCRASH=1 -DPERSIST=0 -DDELAY=0 -DQUAR=4 -DLOSS=0|-O0 -DSAFETY|-m10000 -w20"
  # the waiting protocol: queues and hand-off (handoff.pml)
  # one node, per-node claim: two waiters in ticket order and a plain attempt, lost replies, leases
  "safe-node-waiters|ok|-DN=1 -DC=3 -DMAXR=2 -DLOSS=1 -DLEASE=1 -DMAYTAKE=2 -DATT1=0 -DWAITS1=1|-O1 -DSAFETY|-m20000 -w21|handoff.pml"
  # one node: a Lock's first try, then rounds with a fresh token, beside two plain attempts
  "safe-node-first-try|ok|-DN=1 -DMAXR=3 -DLOSS=1 -DLEASE=1 -DMAYTAKE=2 -DATT0=1|-O0 -DSAFETY|-m20000 -w20|handoff.pml"
  # three nodes: a waiter's grant counted from its round's send time, not its arrival
  "safe-handoff-grant|ok|-DSYMM -DTTL=2 -DMAXR=1|-O1 -DSAFETY|-m20000 -w22|handoff.pml"
  # three nodes: GRANTED names the round recorded when the key was set for the waiter
  "safe-handoff-seq|ok|-DSYMM -DMAXR=2 -DATT1=1|-O1 -DSAFETY|-m20000 -w22|handoff.pml"
  # three nodes, two waiters, lost replies and lease expiry
  "safe-handoff-waiters|ok|-DSYMM -DTTL=2 -DMAXR=1 -DATT1=0 -DWAITS1=1 -DLOSS=1 -DLEASE=1 -DMAYTAKE=2|-O1 -DSAFETY|-m20000 -w21|handoff.pml"
  # (e) a grant's validity counted from its arrival: two holders
  "unsafe-e-grant-arrival|mutex|-DBROKEN=1 -DCLAIM=0 -DTTL=2 -DMAXR=1 -DTIMEOUTS=0 -DGIVEUP=0|-O0 -DSAFETY|-m10000 -w20|handoff.pml"
  # (f) GRANTED names the round it answers instead of the one the key was set for: two holders
  "unsafe-f-granted-seq|mutex|-DBROKEN=2 -DCLAIM=0 -DTTL=2 -DDRIFT=0 -DDRIFT_BOUND=0 -DMAXR=2 -DATT1=1 -DTIMEOUTS=0 -DGIVEUP=0 -DRELEASES=0|-O1 -DSAFETY|-m10000 -w20|handoff.pml"
  # (g) the waiting phase reuses the first try's token: a delayed cleanup deletes the granted key
  "unsafe-g-same-token|claim|-DSAMETOKEN=1 -DN=1 -DMAXR=3 -DLOSS=1 -DLEASE=1 -DMAYTAKE=2 -DATT0=1 -DATT1=0|-O0 -DSAFETY|-m10000 -w18|handoff.pml"
)

# property violated by a trail, from its replay
classify() {
  if grep -q 'acceptance cycle' pan.out; then echo livelock
  elif grep -q 'assertion violated.*lastFence' pan.out; then echo fence
  elif grep -q 'assertion violated.*krem' pan.out; then echo claim
  elif grep -q 'assertion violated.*vrem' pan.out; then echo mutex
  elif grep -q 'assertion violated\|error' pan.out; then echo other-error
  else echo none
  fi
}

run_one() {
  local name=$1 expect=$2 defs=$3 cflags=$4 rflags=$5 pml=${6:-redlock.pml}
  local d=$work/$name
  mkdir -p "$d"
  cp "$(model_src "$pml")" "$d/$pml"
  (
    cd "$d"
    local t0 t1 verdict status states trans depth secs
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    spin -a $defs "$pml" >spin.out 2>&1
    # shellcheck disable=SC2086
    $CC -w $cflags -o pan pan.c >cc.out 2>&1
    # shellcheck disable=SC2086
    timeout "${MODEL_TIMEOUT:-900}" ./pan $rflags >pan.out 2>&1 || true
    t1=$(date +%s.%N)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    states=$(awk '/states, stored/ { print $1; exit }' pan.out)
    trans=$(awk '/ transitions \(= / { print $1; exit }' pan.out)
    depth=$(awk '/depth reached/ { sub(/.*depth reached /, ""); sub(/,.*/, ""); print; exit }' pan.out)
    errors=$(awk '/errors: / { sub(/.*errors: /, ""); print $1; exit }' pan.out)
    status=PASS
    case $expect in
      ok)
        verdict="no error"
        if [ "${errors:-x}" != 0 ]; then verdict="ERROR (errors: ${errors:-?})"; status=FAIL; fi
        if grep -q 'max search depth too small' pan.out; then verdict="$verdict, depth limit hit"; status=FAIL; fi
        ;;
      *)
        if [ -f "$pml.trail" ]; then
          # shellcheck disable=SC2086
          spin -t $defs "$pml" >replay.out 2>&1 || true
          verdict="counterexample: $(classify)"
        else
          verdict="no counterexample"
        fi
        if [ "$verdict" != "counterexample: $expect" ]; then status=FAIL; fi
        if [ "$update" = 1 ] && [ "$status" = PASS ]; then
          mkdir -p "$trails"
          cp "$pml.trail" "$trails/$name.trail"
          { echo "verdict: $verdict"
            echo "found by: spin -a $defs $pml && cc $cflags -o pan pan.c && ./pan $rflags"
            echo "replay:   cp $name.trail $pml.trail && spin -t [-p -g] $defs $pml"
            echo
            # the narration (printf lines), without the final variable dump
            # (for a cycle, its first 40 lines)
            sed -n '/^spin: trail ends/q; /^#processes/q; /^Never claim moves/d; /^ltl /d;
                    /^spin: warning/d; s/^ *//; /^$/d; p' replay.out >story.out
            awk '/START OF CYCLE/ { c = 1 } c && ++n > 41 { print "[... the cycle goes on; see the .trail ...]"; exit } { print }' story.out
          } >"$trails/$name.txt"
        elif [ -f "$trails/$name.txt" ]; then
          want=$(sed -n '1s/^verdict: //p' "$trails/$name.txt")
          if [ "$verdict" != "$want" ]; then verdict="$verdict (fixture says: $want)"; status=FAIL; fi
        else
          verdict="$verdict (no fixture in docs/model/trails)"; status=FAIL
        fi
        ;;
    esac
    if [ ! -s pan.out ] || ! grep -q 'depth reached' pan.out; then
      verdict="pan did not finish: $(tail -3 pan.out spin.out cc.out | tr '\n' ' ')"; status=FAIL
    fi
    printf '%s|%s|%s|%s|%s|%s|%s|%s\n' "$name" "$defs" "${states:-?}" "${trans:-?}" \
      "${depth:-?}" "$verdict" "$secs" "$status" >result
  )
}

selected=()
for c in "${configs[@]}"; do
  name=${c%%|*}
  if [ ${#only[@]} -eq 0 ] || [[ " ${only[*]} " == *" $name "* ]]; then selected+=("$c"); fi
done
[ ${#selected[@]} -gt 0 ] || { echo "no such configuration: ${only[*]}" >&2; exit 2; }

start=$(date +%s.%N)
running=0
for c in "${selected[@]}"; do
  IFS='|' read -r name expect defs cflags rflags pml <<<"$c"
  run_one "$name" "$expect" "$defs" "$cflags" "$rflags" "$pml" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
done
wait || true
end=$(date +%s.%N)

fail=0
echo
echo "| configuration | switches | states stored | transitions | depth | verdict | time (s) | check |"
echo "|---|---|---:|---:|---:|---|---:|---|"
for c in "${selected[@]}"; do
  name=${c%%|*}
  if [ -f "$work/$name/result" ]; then
    IFS='|' read -r n defs states trans depth verdict secs status <"$work/$name/result"
  else
    n=$name; defs=?; states=?; trans=?; depth=?; verdict="did not run"; secs=?; status=FAIL
  fi
  echo "| $n | \`$defs\` | $states | $trans | $depth | $verdict | $secs | $status |"
  [ "$status" = PASS ] || fail=1
done
awk -v a="$start" -v b="$end" 'BEGIN { printf "\ntotal wall time: %.1f s (%s parallel jobs)\n", b - a, "'"$jobs"'" }'
if [ "$fail" = 1 ]; then
  echo "model check FAILED" >&2
  [ "${MODEL_KEEP:-0}" = 1 ] || echo "(rerun with MODEL_KEEP=1 to keep $work)" >&2
  exit 1
fi
echo "model check passed"
