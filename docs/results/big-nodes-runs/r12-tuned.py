"""The tuned runs of a big-nodes journal (seeds up to MAX, loads 0.9-1.2): all five criteria,
fewer hosts than TC, moves below TC's, whole GPUs free against TC's, moves per hour.
usage: python3 r12-tuned.py JOURNAL MAX (for r12-search.sh and r12-ontop.sh)"""
import json, sys, collections, statistics as st
rows = [json.loads(l) for l in open(sys.argv[1])]
by = collections.defaultdict(dict)
for r in rows:
    if r['seed'] <= int(sys.argv[2]) and r['load'] in (0.9, 1.0, 1.1, 1.2):
        by[(r['scenario'], r['load'], r['seed'])][r['policy']] = r
n = all5 = ltc = mv = 0; fo = []; ft = []; m = []
for k, d in by.items():
    if 'origamig' not in d: continue
    o, t, f, p = d['origamig'], d['tc'], d['ff'], d['packing']
    h = lambda x: x['active_hosts']
    n += 1
    c1 = h(o) < h(f) and h(o) < h(t) and h(o) < h(p)
    c2 = o['acceptance_pct'] >= t['acceptance_pct']
    c3 = o['migrations_per_h'] < t['migrations_per_h']
    all5 += c1 and c2 and c3; ltc += h(o) < h(t); mv += c3
    fo.append(o['free_gpus']); ft.append(t['free_gpus']); m.append(o['migrations_per_h'])
print("tuned n=%d all5=%d <TC=%d mv<TC=%d free %.2f-%.2f=%+.2f moves %.2f" % (n, all5, ltc, mv, st.mean(fo), st.mean(ft), st.mean(fo) - st.mean(ft), st.mean(m)))
