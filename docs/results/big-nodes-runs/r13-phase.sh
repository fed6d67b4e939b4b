#!/bin/bash
# How much of a difference is noise (docs/results/big-nodes-variants.md, thirteenth round): the
# default and settings near it, each with the big-host compaction clock shifted by 0, 30, 60 and
# 90 s (`TICKOFF`; the default period is 2 min, so four different schedules of the same
# policy), on the big-nodes grid's tuned runs and, for the default, the wide grid's. Needs the
# release build of r13-experiments.patch as $BIN; run from the repository:
#   BIN=... bash docs/results/big-nodes-runs/r13-phase.sh > docs/results/big-nodes-runs/r13-phase.txt
# The default's journals are kept (r13-phase-default-PHASE.jsonl, r13-phase-wide-default-PHASE.jsonl);
# the others go to a temporary folder.
set -e
BIN=${BIN:-target/release/migplan}
d=docs/results/big-nodes-runs
tmp=$(mktemp -d)
N=(--seeds 1,2,3 --holdout-seeds 4,5 --holdout-loads 0.95,1.05,1.15)
W=(--seeds 1,2,3,4,5,6,7,8,9,10 --holdout-seeds 11,12,13,14,15)
one() { # GRID(n|w) NAME [ENV=VALUE...] -- [KEY=VALUE...]
  g=$1; n=$2; shift 2; envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  set=(); for kv in "$@"; do set+=(--policy-set "$kv"); done
  if [ $g = n ]; then grid=("${N[@]}"); base=$d/default-r12.jsonl; mx=3; pre=r13-phase; else grid=("${W[@]}"); base=$d/wide-default-r12.jsonl; mx=10; pre=r13-phase-wide; fi
  js=()
  for p in 0 30 60 90; do
    if [ $n = default ]; then j=$d/$pre-default-$p.jsonl; else j=$tmp/$g-$n-$p.jsonl; fi
    grep -v '"policy":"origamig"' $base > $j
    env TICKOFF=$p "${envs[@]}" "$BIN" experiment big-nodes "${grid[@]}" "${set[@]}" --journal $j > /dev/null
    js+=($j)
  done
  echo "$g $n ${envs[*]} $* | $(python3 $d/r13-phase.py $mx "${js[@]}")"
}
one n default --
one w default --
one n rate-0.42 -- gpu_compaction_moves_per_departure=0.42
one n rate-0.45 -- gpu_compaction_moves_per_departure=0.45
one n fgd1 -- arrival_fragmentation=1
one n host-fgd-0 FGDH=0 --
one n host-fgd-0.25 FGDH=0.25 --
one n host-fgd-0.5 FGDH=0.5 --
one n host-fgd-0.75 FGDH=0.75 --
one n fgd0.5-host-0.3 FGDH=0.3 -- arrival_fragmentation=0.5
one n across3 -- gpu_compaction_across=3
one n tenant3 -- gpu_compaction_across_tenant=3
one n giw-0.05 GIW=0.05 --
one n spare-by-vms SPAREVMS=1 --
one n avoid-emptiest AVOIDSPARE=1 --
one n same-gpu-0.1 SAMEGPU=0.1 --
one n same-gpu-0.3 SAMEGPU=0.3 --
one n same-gpu-1 SAMEGPU=1 --
one n same-gpu--0.1 SAMEGPU=-0.1 --
one n start-by-fragmentation STARTFGD=1 --
rm -rf $tmp
