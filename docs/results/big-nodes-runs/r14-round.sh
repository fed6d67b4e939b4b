#!/bin/bash
# The fourteenth round (docs/results/big-nodes-variants.md): every variant measured on the
# ensemble of r14-ensemble.sh, in the order of the section's tables. Needs the release build of
# r14-experiments.patch (applied to 14d1265) as $BIN; run from the repository:
#   BIN=... WORK=/tmp/r14 bash docs/results/big-nodes-runs/r14-round.sh > docs/results/big-nodes-runs/r14-round.txt
# A variant whose journals are in $WORK/e prints from them without running again.
d=$(dirname "$0")
e4() { PHASES="0 30 60 90" bash "$d/r14-ensemble.sh" "$@"; }
# Every minute a period of 60 s: phases 0 and 60 (30 and 90) are the same schedule, so six
# phases 10 s apart (the simulator's step).
e6() { PHASES="0 10 20 30 40 50" bash "$d/r14-ensemble.sh" "$@"; }
# The default of 14d1265 and the mechanisms of earlier rounds on the larger ensemble.
e4 off --
e4 r042 -- gpu_compaction_moves_per_departure=0.42
e4 r045 -- gpu_compaction_moves_per_departure=0.45
e4 fgd1 -- arrival_fragmentation=1
e4 fgdh05 FGDH=0.5 --
e4 f05h03 FGDH=0.3 -- arrival_fragmentation=0.5
e4 acr3 -- gpu_compaction_across=3
e4 ten3 -- gpu_compaction_across_tenant=3
e4 giw005 GIW=0.05 --
e4 sparevms SPAREVMS=1 --
e4 excost07 EXCOST=0.7 --
e4 min1 -- gpu_compaction_min=1
e4 idle -- gpu_compaction_idle_gpu=true
e4 heb2 -- host_emptying_big_vms=2
e4 heb4 -- host_emptying_big_vms=4
e4 spare2 -- gpu_compaction_exact_fill_spare=2
# New switches of this round.
e4 nohold1 NOHOLD=1 --
e4 nohold2 NOHOLD=2 --
e4 twovm3 TWOVM=3 --
e4 twovm4 TWOVM=4 --
e4 twovm4-c6 TWOVM=4 -- gpu_compaction_moves_cap=6
e4 twovm6-c8 TWOVM=6 -- gpu_compaction_moves_cap=8
e4 order1 ORDER=1 --
e4 cfgd0.3 CFGD=0.3 --
e4 cfgd1 CFGD=1 --
e4 cfgd3 CFGD=3 --
e4 cfgd10 CFGD=10 --
e4 sc0.3 SCARCE=0.3 --
e4 sc1 SCARCE=1 --
e4 sca0.3 SCARCEA=0.3 --
e4 sca1 SCARCEA=1 --
e4 cfgd1-sf CFGD=1 STARTFGD=1 --
e4 cfgd1-order1 CFGD=1 ORDER=1 --
e4 cfgd1-ord2-0.3 CFGD=1 ORDER=2 ORDW=0.3 --
e4 cfgd1-ord2-1 CFGD=1 ORDER=2 ORDW=1 --
# Combinations with CFGD=1.
e4 cfgd1-r042 CFGD=1 -- gpu_compaction_moves_per_departure=0.42
e4 cfgd1-r043 CFGD=1 -- gpu_compaction_moves_per_departure=0.43
e4 cfgd1-r045 CFGD=1 -- gpu_compaction_moves_per_departure=0.45
e4 cfgd1-acr3 CFGD=1 -- gpu_compaction_across=3
e4 cfgd1-ten3 CFGD=1 -- gpu_compaction_across_tenant=3
e4 cfgd1-acr3-r042 CFGD=1 -- gpu_compaction_across=3 gpu_compaction_moves_per_departure=0.42
e4 cfgd1-ab3 CFGD=1 -- gpu_compaction_across_budget=3
e4 cfgd1-cap3 CFGD=1 -- gpu_compaction_moves_cap=3
e4 cfgd1-cap6 CFGD=1 -- gpu_compaction_moves_cap=6
e4 cfgd1-min1 CFGD=1 -- gpu_compaction_min=1
e4 cfgd1-idle CFGD=1 -- gpu_compaction_idle_gpu=true
e4 cfgd1-idle-r043 CFGD=1 -- gpu_compaction_idle_gpu=true gpu_compaction_moves_per_departure=0.43
e4 cfgd1-idle-r045 CFGD=1 -- gpu_compaction_idle_gpu=true gpu_compaction_moves_per_departure=0.45
# With the compaction every minute: six phases.
e6 b40 CFGD=1 -- gpu_compaction_idle_gpu=true gpu_compaction_min=1 gpu_compaction_moves_per_departure=0.4
e6 b41 CFGD=1 -- gpu_compaction_idle_gpu=true gpu_compaction_min=1 gpu_compaction_moves_per_departure=0.41
e6 b42 CFGD=1 -- gpu_compaction_idle_gpu=true gpu_compaction_min=1 gpu_compaction_moves_per_departure=0.42
e6 b41-noidle CFGD=1 -- gpu_compaction_min=1 gpu_compaction_moves_per_departure=0.41
e6 b41-cfgd05 CFGD=0.5 -- gpu_compaction_idle_gpu=true gpu_compaction_min=1 gpu_compaction_moves_per_departure=0.41
e6 b41-cfgd2 CFGD=2 -- gpu_compaction_idle_gpu=true gpu_compaction_min=1 gpu_compaction_moves_per_departure=0.41
e6 b41-cap5 CFGD=1 -- gpu_compaction_idle_gpu=true gpu_compaction_min=1 gpu_compaction_moves_per_departure=0.41 gpu_compaction_moves_cap=5
e6 b41-sc1 CFGD=1 SCARCE=1 -- gpu_compaction_idle_gpu=true gpu_compaction_min=1 gpu_compaction_moves_per_departure=0.41
e6 b41-sc03 CFGD=1 SCARCE=0.3 -- gpu_compaction_idle_gpu=true gpu_compaction_min=1 gpu_compaction_moves_per_departure=0.41
# Measured after the choice: the new default with the hosts of its compaction open to arrivals.
e6 b40-nohold1 CFGD=1 NOHOLD=1 -- gpu_compaction_idle_gpu=true gpu_compaction_min=1 gpu_compaction_moves_per_departure=0.4
e6 b41-nohold1 CFGD=1 NOHOLD=1 -- gpu_compaction_idle_gpu=true gpu_compaction_min=1 gpu_compaction_moves_per_departure=0.41
e6 b42-nohold1 CFGD=1 NOHOLD=1 -- gpu_compaction_idle_gpu=true gpu_compaction_min=1 gpu_compaction_moves_per_departure=0.42
# The same with the GPUs the compaction vacates held until its moves end, the rest of its hosts open.
e6 b42-nohold3 CFGD=1 NOHOLD=3 -- gpu_compaction_idle_gpu=true gpu_compaction_min=1 gpu_compaction_moves_per_departure=0.42
# The held-out part, once the choice was made (never used to choose).
HOLDOUT=1 e4 off --
HOLDOUT=1 e6 b40 CFGD=1 -- gpu_compaction_idle_gpu=true gpu_compaction_min=1 gpu_compaction_moves_per_departure=0.4
HOLDOUT=1 e6 b41 CFGD=1 -- gpu_compaction_idle_gpu=true gpu_compaction_min=1 gpu_compaction_moves_per_departure=0.41
