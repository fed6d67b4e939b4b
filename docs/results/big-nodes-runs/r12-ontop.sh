#!/bin/bash
# Settings tried on top of the twelfth round's default (FILLX=2, FGD=0.3, 0.4 a departure on the
# patched build), scored like r12-search.sh on tuned runs only: the big-nodes grid's 24 (seeds
# 1-3) and the wide grid's 80 (seeds 1-10). Held-out lines are in the
# journals but not read. Needs the release build of r12-experiments.patch as $BIN; run from the
# repository: bash docs/results/big-nodes-runs/r12-ontop.sh > docs/results/big-nodes-runs/r12-ontop.txt
set -e
BIN=${BIN:-target/release/migplan}
d=docs/results/big-nodes-runs
tmp=$(mktemp -d)
tuned() { python3 $d/r12-tuned.py "$1" "$2"; }
one() { # NAME [ENV=VALUE...] -- KEY=VALUE...
  n=$1; shift; envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  set=(); for kv in "$@"; do set+=(--policy-set "$kv"); done
  grep -v '"policy":"origamig"' $d/default-bound.jsonl > $tmp/a.jsonl
  env FILLX=2 FGD=0.3 "${envs[@]}" "$BIN" experiment big-nodes --seeds 1,2,3 --holdout-seeds 4,5 --holdout-loads 0.95,1.05,1.15 "${set[@]}" --journal $tmp/a.jsonl > /dev/null 2>&1
  grep -v '"policy":"origamig"' $d/wide-default-bound.jsonl > $tmp/b.jsonl
  env FILLX=2 FGD=0.3 "${envs[@]}" "$BIN" experiment big-nodes --seeds 1,2,3,4,5,6,7,8,9,10 --holdout-seeds 11,12,13,14,15 "${set[@]}" --journal $tmp/b.jsonl > /dev/null 2>&1
  echo "$n $* | $(tuned $tmp/a.jsonl 3) | $(tuned $tmp/b.jsonl 10)"
}
R=gpu_compaction_moves_per_departure=0.4
one n-fgdc1 FGDC=1 -- $R
one n-of1 ORDERF=1 -- $R
one n-across3 -- $R gpu_compaction_across=3
one n-tenant3 -- $R gpu_compaction_across_tenant=3
one n-min1 -- $R gpu_compaction_min=1
one n-min3 -- $R gpu_compaction_min=3
one n-rg1 -- $R reenable_gap_rise=1
one m1-tenant3 -- $R gpu_compaction_min=1 gpu_compaction_across_tenant=3
one m1-across3 -- $R gpu_compaction_min=1 gpu_compaction_across=3
one m1-cap3 -- $R gpu_compaction_min=1 gpu_compaction_moves_cap=3
one m1-cap5 -- $R gpu_compaction_min=1 gpu_compaction_moves_cap=5
one m1-r0.375 -- gpu_compaction_min=1 gpu_compaction_moves_per_departure=0.375
one m1-r0.425 -- gpu_compaction_min=1 gpu_compaction_moves_per_departure=0.425
one m1-f1 FGD=1 -- $R gpu_compaction_min=1
one ex-first EXFIRST=1 -- $R
one ex-first-r0.35 EXFIRST=1 -- gpu_compaction_moves_per_departure=0.35
one fgd-size FGDSIZE=1 -- $R
one fgd-inverse-size FGDSIZE=-1 -- $R
one exact-across-xf3 XF=3 -- $R
one exact-across-xf4 XF=4 -- $R
one exact-across-xf3-b3 XF=3 -- $R gpu_compaction_across_budget=3
one exact-across-xf3-r0375 XF=3 -- gpu_compaction_moves_per_departure=0.375
one exact-fill-closed FILLDEF=1 -- $R
rm -rf "$tmp"
