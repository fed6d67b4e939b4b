#!/bin/bash
# Where the whole GPUs go: the time-averaged MIG GPUs of each policy by (VMs on the GPU, 4 for four or more,
# free memory slices, host active), over the measured 12 h of the big-nodes grid's 36 runs.
# Needs a build of r12-experiments.patch (WASTE=1 prints the histogram of each run on stderr).
# usage (from the repository, the patched release build as $BIN):
#   bash docs/results/big-nodes-runs/r12-waste.sh > docs/results/big-nodes-runs/r12-waste.txt
set -e
BIN=${BIN:-target/release/migplan}
tmp=$(mktemp -d)
grid() { "$BIN" experiment big-nodes --seeds 1,2,3 --holdout-seeds 4,5 --holdout-loads 0.95,1.05,1.15 "$@" --journal "$tmp/j.jsonl" 2> "$tmp/err" > /dev/null; rm -f "$tmp/j.jsonl"; }
py=docs/results/big-nodes-runs/r12-waste.py
echo "# every policy, the default (nothing set)"; WASTE=1 grid; python3 $py "$tmp/err"
echo; echo "# FGD=1 (arrivals by expected fragmentation; the switch reaches every policy that places by TC's best fit, so the tc rows here are TC with it)"; WASTE=1 FGD=1 grid; python3 $py "$tmp/err"
echo; echo "# OrigaMIG's arrival rule alone (gpu_compaction = false, theta = 10000)"; WASTE=1 grid --policy-set gpu_compaction=false --policy-set theta=10000; python3 $py "$tmp/err"
echo; echo "# the same with FGD=1 (tc rows: TC with FGD as well)"; WASTE=1 FGD=1 grid --policy-set gpu_compaction=false --policy-set theta=10000; python3 $py "$tmp/err"
echo; echo "# the twelfth round's default (FILLX=2, FGD=0.3, 0.4 a departure; tc rows: TC with FGD, compare the first block's)"; WASTE=1 FILLX=2 FGD=0.3 grid --policy-set gpu_compaction_moves_per_departure=0.4; python3 $py "$tmp/err"
rm -rf "$tmp"
