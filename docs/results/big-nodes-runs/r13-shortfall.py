"""Whole GPUs free, OrigaMIG's default against TC, run by run (paired), with the standard error
of the mean, and the ratio of OrigaMIG's moves per hour to TC's by fleet, from the default's
journals of big-nodes.md (default-r12.jsonl) and big-nodes-wide.md (wide-default-r12.jsonl).
usage: python3 docs/results/big-nodes-runs/r13-shortfall.py > docs/results/big-nodes-runs/r13-shortfall.txt"""
import collections, json, math, os, statistics as st
d = os.path.dirname(os.path.abspath(__file__))
for f, tuned in (("default-r12.jsonl", range(1, 4)), ("wide-default-r12.jsonl", range(1, 11))):
    by = collections.defaultdict(dict)
    for line in open(f"{d}/{f}"):
        r = json.loads(line)
        by[(r["scenario"], r["load"], r["seed"])][r["policy"]] = r
    runs = {k: v for k, v in by.items() if "origamig" in v}
    for part, inside in (("tuned", True), ("held out", False)):
        x = [v["origamig"]["free_gpus"] - v["tc"]["free_gpus"] for k, v in runs.items() if (k[2] in tuned) == inside]
        m, se = st.mean(x), st.stdev(x) / math.sqrt(len(x))
        print(f"{f} {part}: {len(x)} runs, whole GPUs free O - TC {m:+.3f} ± {se:.3f} (standard error; "
              f"95 % ± {1.96 * se:.3f}), O ≥ TC in {sum(v >= 0 for v in x)}")
    for sc in sorted({k[0] for k in runs}):
        r = [v["origamig"]["migrations_per_h"] / v["tc"]["migrations_per_h"] for k, v in runs.items() if k[0] == sc]
        print(f"{f} {sc}: moves O / TC over {len(r)} runs: mean {st.mean(r):.3f}, sd {st.stdev(r):.3f}, largest {max(r):.2f}")
