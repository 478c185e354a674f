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
  "safe-fence-history|ok|-DSYMM -DGENCTR=1 -DTTL=2 -DLOSS=0|-O2 -DSAFETY|-m20000 -w23"
  "safe-core|ok|-DSYMM|-O2 -DSAFETY|-m20000 -w22"
  "safe-crash-aof|ok|-DSYMM -DMAXCRASH=1 -DFENCE=0|-O2 -DSAFETY|-m20000 -w20"
  "safe-crash-delay|ok|-DSYMM -DMAXCRASH=1 -DPERSIST=0 -DDELAY=1 -DFENCE=0|-O2 -DSAFETY|-m20000 -w20"
  "safe-crash-quarantine|ok|-DSYMM -DMAXCRASH=1 -DPERSIST=0 -DDELAY=0 -DQUAR=4 -DFENCE=0 -DLOSS=0|-O2 -DSAFETY|-m20000 -w22"
  "safe-crash-ceiling|ok|-DSYMM -DMAXCRASH=1 -DPERSIST=0 -DDELAY=0 -DQUAR=5 -DCEIL=1 -DWIN=1 -DMAXEXT=1 -DMAXEXT1=0 -DFENCE=0 -DLOSS=0 -DPRUNE=1|-O2 -DSAFETY|-m20000 -w21"
  "safe-crash-ceiling-rolling|ok|-DSYMM -DMAXCRASH=2 -DROLLING=1 -DPERSIST=0 -DDELAY=0 -DQUAR=5 -DCEIL=1 -DWIN=1 -DMAXEXT=1 -DMAXEXT1=0 -DFENCE=0 -DLOSS=0 -DPRUNE=1|-O2 -DSAFETY|-m20000 -w22"
  "safe-crash-ceiling-slow-client|ok|-DSYMM -DMAXCRASH=1 -DPERSIST=0 -DDELAY=0 -DQUAR=5 -DCEIL=1 -DWIN=2 -DWIN1=1 -DMAXEXT=1 -DMAXEXT1=0 -DFENCE=0 -DLOSS=0 -DPRUNE=1|-O2 -DSAFETY|-m20000 -w21"
  "safe-extend|ok|-DSYMM -DMAXEXT=1 -DMAXEXT1=0 -DFENCE=0|-O2 -DSAFETY|-m20000 -w20"
  "live|ok|-DLIVE=1|-O2 -DNFAIR=4|-a -f -m100000 -w18"
  "live-no-jitter|livelock|-DLIVE=1 -DBACKOFF=0|-O0 -DNFAIR=4|-a -f -m100000 -w18"
  "unsafe-a-no-persist|mutex|-DMAXCRASH=1 -DPERSIST=0 -DDELAY=0 -DFENCE=0 -DLOSS=0|-O2 -DSAFETY|-m10000 -w20"
  "unsafe-a-short-quarantine|mutex|-DMAXCRASH=1 -DPERSIST=0 -DDELAY=0 -DQUAR=2 -DFENCE=0 -DLOSS=0|-O2 -DSAFETY|-m10000 -w20"
  "unsafe-a-ceiling-in-flight|mutex|-DMAXCRASH=1 -DPERSIST=0 -DDELAY=0 -DQUAR=5 -DCEIL=1 -DFENCE=0 -DLOSS=0 -DPRUNE=1|-O0 -DSAFETY|-m10000 -w20"
  "unsafe-a-ceiling-minority|mutex|-DMAXCRASH=1 -DPERSIST=0 -DDELAY=0 -DQUAR=5 -DCEIL=1 -DWIN=1 -DCEIL_MINORITY=1 -DFENCE=0 -DLOSS=0 -DPRUNE=1|-O0 -DSAFETY|-m10000 -w20"
  "unsafe-a-ceiling-no-raise|mutex|-DMAXCRASH=1 -DPERSIST=0 -DDELAY=0 -DQUAR=5 -DCEIL=1 -DWIN=1 -DCEIL_NORAISE=1 -DFENCE=0 -DLOSS=0 -DPRUNE=1|-O0 -DSAFETY|-m10000 -w20"
  "unsafe-a-ceiling-no-raise-ext|mutex|-DMAXCRASH=1 -DPERSIST=0 -DDELAY=0 -DQUAR=5 -DCEIL=1 -DWIN=1 -DCEIL_NORAISE=2 -DMAXEXT=0 -DMAXEXT1=1 -DFENCE=0 -DLOSS=0 -DPRUNE=1|-O0 -DSAFETY|-m10000 -w20"
  "unsafe-a-ceiling-own-settle|mutex|-DMAXCRASH=1 -DPERSIST=0 -DDELAY=0 -DQUAR=5 -DCEIL=1 -DWIN=2 -DWIN1=1 -DSETTLE_OWN=1 -DFENCE=0 -DLOSS=0 -DPRUNE=1|-O0 -DSAFETY|-m10000 -w20"
  "unsafe-b-drift|mutex|-DDRIFT_BOUND=2 -DFENCE=0 -DLOSS=0|-O0 -DSAFETY|-m10000 -w20"
  "unsafe-c-naive-fence|fence|-DFENCE=2 -DMAXATT=2 -DTTL=2 -DLOSS=0|-O2 -DSAFETY|-m10000 -w20"
  "unsafe-d-delay-no-persist|fence|-DMAXCRASH=1 -DPERSIST=0 -DDELAY=1 -DLOSS=0|-O0 -DSAFETY|-m10000 -w20"
  "unsafe-d-quarantine-no-persist|fence|-DMAXCRASH=1 -DPERSIST=0 -DDELAY=0 -DQUAR=4 -DLOSS=0|-O0 -DSAFETY|-m10000 -w20"
  # the waiting protocol: queues and hand-off (handoff.pml)
  "safe-node-waiters|ok|-DN=1 -DC=3 -DMAXR=2 -DLOSS=1 -DLEASE=1 -DMAYTAKE=2 -DATT1=0 -DWAITS1=1|-O1 -DSAFETY|-m20000 -w21|handoff.pml"
  "safe-node-first-try|ok|-DN=1 -DMAXR=3 -DLOSS=1 -DLEASE=1 -DMAYTAKE=2 -DATT0=1|-O0 -DSAFETY|-m20000 -w20|handoff.pml"
  "safe-handoff-grant|ok|-DSYMM -DTTL=2 -DMAXR=1|-O1 -DSAFETY|-m20000 -w22|handoff.pml"
  "safe-handoff-seq|ok|-DSYMM -DMAXR=2 -DATT1=1|-O1 -DSAFETY|-m20000 -w22|handoff.pml"
  "safe-handoff-waiters|ok|-DSYMM -DTTL=2 -DMAXR=1 -DATT1=0 -DWAITS1=1 -DLOSS=1 -DLEASE=1 -DMAYTAKE=2|-O1 -DSAFETY|-m20000 -w21|handoff.pml"
  "unsafe-e-grant-arrival|mutex|-DBROKEN=1 -DCLAIM=0 -DTTL=2 -DMAXR=1 -DTIMEOUTS=0 -DGIVEUP=0|-O0 -DSAFETY|-m10000 -w20|handoff.pml"
  "unsafe-f-granted-seq|mutex|-DBROKEN=2 -DCLAIM=0 -DTTL=2 -DDRIFT=0 -DDRIFT_BOUND=0 -DMAXR=2 -DATT1=1 -DTIMEOUTS=0 -DGIVEUP=0 -DRELEASES=0|-O1 -DSAFETY|-m10000 -w20|handoff.pml"
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
