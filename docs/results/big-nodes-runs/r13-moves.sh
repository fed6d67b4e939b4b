#!/bin/bash
# Where the moves go, move by move (docs/results/big-nodes-variants.md, thirteenth round):
# OrigaMIG's default and TC on hgx-a100 and dgx-h100, loads 1.0 and 1.1, seeds 1 and 2, 12 h +
# 12 h, each run's migrations, admissions, departures and plans logged by the patched build
# (MOVELOG), and each GPU OrigaMIG's compaction vacates with the VMs it moved (CLOG), summed by
# r13-moves.py over the measured 12 h. Needs the release build of
# r13-experiments.patch as $BIN; run from the repository:
#   BIN=... bash docs/results/big-nodes-runs/r13-moves.sh > docs/results/big-nodes-runs/r13-moves.txt
set -e
BIN=${BIN:-target/release/migplan}
tmp=$(mktemp -d)
for sc in hgx-a100 dgx-h100; do for l in 1.0 1.1; do for s in 1 2; do for p in origamig tc; do
  CLOG=$tmp/$sc-$l-$s-$p.vacated MOVELOG=$tmp/$sc-$l-$s-$p.log "$BIN" simulate scenarios/$sc.toml --policy $p --seed $s --load $l --warmup 12 --hours 12 --csv > /dev/null
done; done; done; done
python3 docs/results/big-nodes-runs/r13-moves.py $tmp
rm -rf $tmp
