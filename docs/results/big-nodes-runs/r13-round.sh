#!/bin/bash
# The thirteenth round (docs/results/big-nodes-variants.md): each variant on the big-nodes grid
# (journal and Markdown r13-NAME.*, rows printed by PREFIX=r13 python3 r12-table.py NAME), and
# the variants marked wide also on the wide grid (journal r13-w-NAME.jsonl; the line reads its
# tuned runs only, seeds 1-10). Needs the release build of r13-experiments.patch (applied to 14d1265) as
# $BIN; run from the repository:
#   BIN=... bash docs/results/big-nodes-runs/r13-round.sh > docs/results/big-nodes-runs/r13-round.txt
# Every journal starts from the FF, TC and packing lines of default-r12.jsonl and
# wide-default-r12.jsonl (the same code), so only OrigaMIG runs.
set -e
BIN=${BIN:-target/release/migplan}
d=docs/results/big-nodes-runs
one() { # NAME wide|- [ENV=VALUE...] -- [KEY=VALUE...]
  n=$1; w=$2; shift 2; envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  set=(); for kv in "$@"; do set+=(--policy-set "$kv"); done
  j=$d/r13-$n.jsonl; rm -f $j $d/r13-$n.md
  grep -v '"policy":"origamig"' $d/default-r12.jsonl > $j
  env "${envs[@]}" "$BIN" experiment big-nodes --seeds 1,2,3 --holdout-seeds 4,5 --holdout-loads 0.95,1.05,1.15 "${set[@]}" --journal $j --markdown $d/r13-$n.md > /dev/null
  line="$n ${envs[*]} $* | $(python3 $d/r12-tuned.py $j 3)"
  if [ "$w" = wide ]; then
    jw=$d/r13-w-$n.jsonl; rm -f $jw
    grep -v '"policy":"origamig"' $d/wide-default-r12.jsonl > $jw
    env "${envs[@]}" "$BIN" experiment big-nodes --seeds 1,2,3,4,5,6,7,8,9,10 --holdout-seeds 11,12,13,14,15 "${set[@]}" --journal $jw > /dev/null
    line="$line | $(python3 $d/r12-tuned.py $jw 10)"
  fi
  echo "$line"
}
one off wide --
one oracle-0.5 wide ORACLE=0.5 --
one oracle-1 - ORACLE=1 --
one oracle-stay4 - ORACLE=-4 --
one noremove-0.5 wide NOREMOVE=0.5 --
one noremove-1 - NOREMOVE=1 --
one giw-0.02 - GIW=0.02 --
one giw-0.05 wide GIW=0.05 --
one giw-0.1 - GIW=0.1 --
one giw-0.3 - GIW=0.3 --
one giw-0.05-from2 - GIW=0.05 GITH=2 --
one giw-0.05-from4 - GIW=0.05 GITH=4 --
one excost-0.5 wide EXCOST=0.5 --
one excost-0.7 wide EXCOST=0.7 --
one excost-0 - EXCOST=0 --
one excost-0.5-r0.35 - EXCOST=0.5 -- gpu_compaction_moves_per_departure=0.35
one spare0-r0.3 - -- gpu_compaction_exact_fill_spare=0 gpu_compaction_moves_per_departure=0.3
one spare0-r0.35 - -- gpu_compaction_exact_fill_spare=0 gpu_compaction_moves_per_departure=0.35
one spare0-r0.4 wide -- gpu_compaction_exact_fill_spare=0 gpu_compaction_moves_per_departure=0.4
one spare1-r0.35 - -- gpu_compaction_moves_per_departure=0.35
one spare1-r0.45 wide -- gpu_compaction_moves_per_departure=0.45
one spare2-r0.45 - -- gpu_compaction_exact_fill_spare=2 gpu_compaction_moves_per_departure=0.45
