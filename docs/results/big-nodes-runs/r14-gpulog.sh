#!/bin/bash
# Where GPUs go idle and in use (docs/results/big-nodes-variants.md, fourteenth round): 14d1265's
# default and TC on hgx-a100 and dgx-h100, loads 1.0 and 1.1, seeds 1 and 2, 12 h + 12 h, every
# change of a GPU between idle and in use logged by the patched build (GPULOG), summed over the
# measured 12 h by r14-gpulog.py. Needs the release build of r14-experiments.patch as $BIN; run
# from the repository:
#   BIN=... bash docs/results/big-nodes-runs/r14-gpulog.sh > docs/results/big-nodes-runs/r14-gpulog.txt
set -e
BIN=${BIN:-target/release/migplan}
tmp=$(mktemp -d)
for sc in hgx-a100 dgx-h100; do for l in 1.0 1.1; do for s in 1 2; do for p in origamig tc; do
  GPULOG=$tmp/$sc-$l-$s-$p.log "$BIN" simulate scenarios/$sc.toml --policy $p --seed $s --load $l --warmup 12 --hours 12 --csv > /dev/null
done; done; done; done
python3 "$(dirname "$0")/r14-gpulog.py" $tmp
rm -rf $tmp
