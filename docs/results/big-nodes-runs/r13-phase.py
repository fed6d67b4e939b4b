"""One line per setting from its journals at several phases of the big-host compaction clock:
tuned runs only (loads 0.9-1.2, seeds up to MAX), per phase all five criteria, fewer hosts than
TC, moves below TC's, whole GPUs free O - TC, then the means over the phases.
usage: python3 r13-phase.py MAX JOURNAL... (for r13-phase.sh)"""
import collections, json, statistics as st, sys
mx = int(sys.argv[1]); out = []
for f in sys.argv[2:]:
    by = collections.defaultdict(dict)
    for line in open(f):
        r = json.loads(line)
        if r["seed"] <= mx and r["load"] in (0.9, 1.0, 1.1, 1.2):
            by[(r["scenario"], r["load"], r["seed"])][r["policy"]] = r
    n = a5 = lt = mv = 0; d = []; m = []
    for v in by.values():
        o, t, ff, p = v["origamig"], v["tc"], v["ff"], v["packing"]
        h = lambda x: x["active_hosts"]
        c1 = h(o) < h(ff) and h(o) < h(t) and h(o) < h(p)
        c2 = o["acceptance_pct"] >= t["acceptance_pct"]
        c3 = o["migrations_per_h"] < t["migrations_per_h"]
        n += 1; a5 += c1 and c2 and c3; lt += h(o) < h(t); mv += c3
        d.append(o["free_gpus"] - t["free_gpus"]); m.append(o["migrations_per_h"])
    out.append((n, a5, lt, mv, st.mean(d), st.mean(m)))
j = lambda i: "/".join(str(o[i]) for o in out)
print(f"runs {out[0][0]} | all five {j(1)} (mean {st.mean(o[1] for o in out):.1f}) | fewer hosts than TC {j(2)} | "
      f"moves < TC {j(3)} | whole GPUs free O - TC {' '.join(f'{o[4]:+.2f}' for o in out)} "
      f"(mean {st.mean(o[4] for o in out):+.3f}) | moves/h {st.mean(o[5] for o in out):.2f}")
