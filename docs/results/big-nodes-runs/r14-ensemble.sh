#!/bin/bash
# The fourteenth round's ensemble (docs/results/big-nodes-variants.md): one setting of OrigaMIG
# on 160 tuning runs of the big-nodes grid (hgx-a100 and dgx-h100, loads 0.9-1.2, seeds 1-10 and
# 16-25; never the held-out seeds 4-5 and 11-15 or loads 0.95-1.15 for a choice) at several
# phases of the big hosts' compaction clock (`TICKOFF`, seconds), each phase another draw of
# the same setting. Needs the release build of r14-experiments.patch (on 14d1265) as $BIN;
# FF, TC and packing run once into $WORK/base.jsonl. Run from the repository:
#   BIN=... WORK=/tmp/r14 PHASES="0 30 60 90" bash docs/results/big-nodes-runs/r14-ensemble.sh NAME [ENV=VALUE...] -- [KEY=VALUE...]
# HOLDOUT=1 runs the held-out part instead (loads 0.95, 1.05 and 1.15, seeds 4, 5 and 11-15;
# the experiment's own held-out part is then seed 26 at load 0.9, left out of the summary), to
# check a choice once it is made.
# It prints one line: the name, the settings, then the share of runs meeting all five
# criteria, fewer hosts than TC and fewer moves than TC (mean over phases), whole GPUs free
# O - TC per phase and their mean (standard error over all runs), OrigaMIG's moves per hour.
set -e
BIN=${BIN:-target/release/migplan}
WORK=${WORK:-/tmp/r14}
PHASES=${PHASES:-0 30 60 90}
name=$1; shift
envs=(); while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done; [ "$1" = "--" ] && shift
set=(); for kv in "$@"; do set+=(--policy-set "$kv"); done
if [ "$HOLDOUT" = 1 ]; then
  grid=(--loads 0.95,1.05,1.15 --seeds 4,5,11,12,13,14,15 --holdout-seeds 26 --holdout-loads 0.9)
  e=h; base=hbase; part=--holdout
else
  grid=(--seeds 1,2,3,4,5,6,7,8,9,10,16,17,18,19,20,21,22,23,24,25 --holdout-seeds 11 --holdout-loads 0.95)
  e=e; base=base; part=--tuned
fi
mkdir -p "$WORK/$e"
if [ ! -f "$WORK/$base.jsonl" ]; then
  "$BIN" experiment big-nodes "${grid[@]}" --journal "$WORK/${base}0.jsonl" > /dev/null
  grep -v '"policy":"origamig"' "$WORK/${base}0.jsonl" > "$WORK/$base.jsonl"
fi
js=()
run() { j="$WORK/$e/$name-p$1.jsonl"; [ -f "$j" ] || grep -v '"policy":"origamig"' "$WORK/$base.jsonl" > "$j"
  env TICKOFF=$1 "${envs[@]}" "$BIN" experiment big-nodes "${grid[@]}" "${set[@]}" --journal "$j" > /dev/null; }
ph=($PHASES)
for ((i = 0; i < ${#ph[@]}; i += 2)); do
  run ${ph[i]} & [ -n "${ph[i+1]}" ] && run ${ph[i+1]} & wait
done
for p in "${ph[@]}"; do js+=("$WORK/$e/$name-p$p.jsonl"); done
echo "$name $* ${envs[*]} :: $(python3 "$(dirname "$0")/r14-ensemble.py" $part "${js[@]}")"
