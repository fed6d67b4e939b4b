#!/usr/bin/env bash
# Whole GPUs free hour by hour in the measured window, OrigaMIG against TC: each run is made
# again with a measured window of 1, 2, ..., 12 h (the same workload, so the same first hours),
# and an hour's mean is the difference of two windows' means. Prints one line a run:
# fleet seed load policy hours active_gpus_pct migrations_per_h. Run from the repository's root
# with a release build: bash docs/results/big-nodes-runs/r11-hourly.sh > r11-hourly.txt
set -euo pipefail
B=${MIGPLAN:-target/release/migplan}
for sc in hgx-a100 dgx-h100; do for seed in 1 2 3; do for load in 0.9 1.1; do
  for p in origamig tc; do for h in $(seq 1 12); do
    echo "$sc $seed $load $p $h $($B simulate scenarios/$sc.toml --policy $p --seed $seed --load $load \
      --hours $h --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["active_gpus_pct"], d["migrations_per_h"])')"
  done; done
done; done; done
