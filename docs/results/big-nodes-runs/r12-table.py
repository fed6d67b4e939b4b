"""Prints the twelfth round's table rows (docs/results/big-nodes-variants.md) from the r12-*
journals and Markdown files: python3 docs/results/big-nodes-runs/r12-table.py NAME...
(PREFIX=r13 for the thirteenth round's r13-* files)."""
import json, re, statistics as st, sys, os
d = os.path.dirname(os.path.abspath(__file__))
P = os.environ.get("PREFIX", "r12")
# TC's curve (big-nodes-frontier.md): moves/h, whole GPUs free over the 36 runs.
TC = [(4.49, 38.81), (5.21, 39.09), (6.39, 39.39), (7.84, 39.61), (8.64, 39.80), (10.36, 40.06)]
def tc_at(m):
    for (a, x), (b, y) in zip(TC, TC[1:]):
        if a <= m <= b:
            return x + (y - x) * (m - a) / (b - a)
    return None
for name in sys.argv[1:]:
    md = open(f"{d}/{P}-{name}.md").read()
    parts = {}
    for line in md.splitlines():
        m = re.match(r"\| (tuned|held out) \| (\d+) \|", line)
        if m:
            c = [x.strip() for x in line.split("|")]
            parts[m.group(1)] = (c[4], c[7], c[8], c[9])  # < TC, moves < TC, all five, free
    rows = [json.loads(l) for l in open(f"{d}/{P}-{name}.jsonl")]
    by = {}
    for r in rows:
        by.setdefault((r["scenario"], r["load"], r["seed"]), {})[r["policy"]] = r
    fo, mo, rat = [], [], []
    for k, p in by.items():
        if "origamig" in p:
            fo.append(p["origamig"]["free_gpus"]); mo.append(p["origamig"]["migrations_per_h"])
            rat.append(mo[-1] / p["tc"]["migrations_per_h"])
    f, m = st.mean(fo), st.mean(mo)
    t = tc_at(m)
    curve = "-" if t is None else f"{t:.2f} ({f - t:+.2f})"
    s = lambda x: x.split(" (")[0]
    tu, ho = parts["tuned"], parts["held out"]
    print(f"| [{P}-{name}](big-nodes-runs/{P}-{name}.md) | {s(tu[0])}, {s(ho[0])} | {s(tu[1])}, {s(ho[1])} | "
          f"{s(tu[2])}, {s(ho[2])} | {tu[3]}; {ho[3]} | {f:.2f}, {m:.2f}; {st.mean(rat):.2f}, {st.stdev(rat):.3f} | {curve} |")
