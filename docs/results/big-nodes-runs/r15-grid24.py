# The fifteenth round (docs/results/big-nodes-variants.md): how often the committed big-nodes.md
# grid would meet the goal's table, phase by phase of the compaction's clock. For each setting of
# r15-round.sh, the 24 tuned runs of big-nodes.md (seeds 1-3, loads 0.9-1.2, both fleets) out of
# each phase's journal of the ensemble: all five criteria in how many runs (the goal asks 22 of
# 24) and whole GPUs free O - TC on average (the goal asks >= 0). Run from the repository:
#   python3 docs/results/big-nodes-runs/r15-grid24.py $WORK/e > docs/results/big-nodes-runs/r15-grid24.txt
import json, sys, collections, statistics as st
work = sys.argv[1]
names = ["b40", "b41", "b42", "b40-nohold3", "b41-nohold3", "b42-nohold3", "b41-nohold4", "b42-nohold4"]
phases = [0, 10, 20, 30, 40, 50]
print("setting | per phase (0..50 s): all five of 24 / free O-TC | phases meeting both")
for name in names:
    cells = []; both = 0
    for p in phases:
        by = collections.defaultdict(dict)
        for l in open(f"{work}/{name}-p{p}.jsonl"):
            r = json.loads(l)
            if r["seed"] in (1, 2, 3) and r["load"] in (0.9, 1.0, 1.1, 1.2):
                by[(r["scenario"], r["load"], r["seed"])][r["policy"]] = r
        a5 = 0; d = []
        for v in by.values():
            o, t, ff, pk = v["origamig"], v["tc"], v["ff"], v["packing"]
            h = lambda x: x["active_hosts"]
            ok = h(o) < h(ff) and h(o) < h(t) and h(o) < h(pk)
            ok = ok and o["acceptance_pct"] >= t["acceptance_pct"] and o["migrations_per_h"] < t["migrations_per_h"]
            a5 += ok; d.append(o["free_gpus"] - t["free_gpus"])
        assert len(d) == 24, (name, p, len(d))
        f = st.mean(d); both += a5 >= 22 and f >= 0
        cells.append(f"{a5}/{f:+.3f}")
    print(f"{name} | {' '.join(cells)} | {both} of 6")
