#!/bin/bash
# The twelfth round's search over exact fills (FILLX), the arrival's fragmentation weight (FGD),
# the rate, the account and the budget across hosts, scored on tuned runs only: the big-nodes
# grid's 24 (seeds 1-3) and the wide grid's 80 (seeds 1-10). Held-out lines are in the
# journals but not read. Needs the release build of r12-experiments.patch as $BIN; run from the
# repository: bash docs/results/big-nodes-runs/r12-search.sh > docs/results/big-nodes-runs/r12-search.txt
set -e
BIN=${BIN:-target/release/migplan}
d=docs/results/big-nodes-runs
tmp=$(mktemp -d)
tuned() { python3 $d/r12-tuned.py "$1" "$2"; }
for fx in 2 3; do for r in 0.4 0.425 0.45; do for f in 0.3 1; do for c in 3 4; do for b in 2 3; do
  n=s-fx$fx-r$r-f$f-c$c-b$b
  set=(--policy-set gpu_compaction_moves_per_departure=$r --policy-set gpu_compaction_moves_cap=$c --policy-set gpu_compaction_across_budget=$b)
  grep -v '"policy":"origamig"' $d/default-bound.jsonl > $tmp/a.jsonl
  FILLX=$fx FGD=$f "$BIN" experiment big-nodes --seeds 1,2,3 --holdout-seeds 4,5 --holdout-loads 0.95,1.05,1.15 "${set[@]}" --journal $tmp/a.jsonl > /dev/null 2>&1
  grep -v '"policy":"origamig"' $d/wide-default-bound.jsonl > $tmp/b.jsonl
  FILLX=$fx FGD=$f "$BIN" experiment big-nodes --seeds 1,2,3,4,5,6,7,8,9,10 --holdout-seeds 11,12,13,14,15 "${set[@]}" --journal $tmp/b.jsonl > /dev/null 2>&1
  echo "$n | $(tuned $tmp/a.jsonl 3) | $(tuned $tmp/b.jsonl 10)"
done; done; done; done; done
rm -rf "$tmp"
