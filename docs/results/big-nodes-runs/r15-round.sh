#!/bin/bash
# The fifteenth round (docs/results/big-nodes-variants.md): a compaction of big hosts that holds
# from arrivals only the GPUs its moves leave (NOHOLD=3 and 4 of r14-experiments.patch; 4 is
# gpu_compaction_hold_hosts = false of the product), at three rates of moves, on the ensemble of
# r14-ensemble.sh, then the chosen setting once on the held-out part. Needs the release build of
# r14-experiments.patch (applied to 14d1265) as $BIN; run from the repository:
#   BIN=... WORK=/tmp/r14 bash docs/results/big-nodes-runs/r15-round.sh > docs/results/big-nodes-runs/r15-round.txt
# A variant whose journals are in $WORK/e (or $WORK/h) prints from them without running again.
d=$(dirname "$0")
e6() { PHASES="0 10 20 30 40 50" bash "$d/r14-ensemble.sh" "$@"; }
B="gpu_compaction_idle_gpu=true gpu_compaction_min=1"
# The fourteenth round's default and its rates, holding the compaction's hosts (for reference).
e6 b40 CFGD=1 -- $B gpu_compaction_moves_per_departure=0.4
e6 b41 CFGD=1 -- $B gpu_compaction_moves_per_departure=0.41
e6 b42 CFGD=1 -- $B gpu_compaction_moves_per_departure=0.42
# Hosts open to arrivals while the moves run (NOHOLD=1: not even the GPUs they leave are held).
e6 b40-nohold1 CFGD=1 NOHOLD=1 -- $B gpu_compaction_moves_per_departure=0.4
e6 b42-nohold1 CFGD=1 NOHOLD=1 -- $B gpu_compaction_moves_per_departure=0.42
# Only the GPUs the moves leave held (NOHOLD=3 keeps them masked through a later call's moves as
# well, a slip of the experiment; NOHOLD=4 is the product's rule).
e6 b40-nohold3 CFGD=1 NOHOLD=3 -- $B gpu_compaction_moves_per_departure=0.4
e6 b41-nohold3 CFGD=1 NOHOLD=3 -- $B gpu_compaction_moves_per_departure=0.41
e6 b42-nohold3 CFGD=1 NOHOLD=3 -- $B gpu_compaction_moves_per_departure=0.42
e6 b41-nohold4 CFGD=1 NOHOLD=4 -- $B gpu_compaction_moves_per_departure=0.41
e6 b42-nohold4 CFGD=1 NOHOLD=4 -- $B gpu_compaction_moves_per_departure=0.42
# Held out, once the choice was made (b40: the fourteenth round's default, for reference).
HOLDOUT=1 e6 b40 CFGD=1 -- $B gpu_compaction_moves_per_departure=0.4
HOLDOUT=1 e6 b42-nohold4 CFGD=1 NOHOLD=4 -- $B gpu_compaction_moves_per_departure=0.42
