"""Per measured hour, over the runs of r11-hourly.txt: OrigaMIG's whole GPUs free less TC's,
TC's GPUs in use, and both policies' moves in that hour.
Usage: python3 r11-hourly.py r11-hourly.txt"""
import collections
import sys

GPUS = {"hgx-a100": 128, "dgx-h100": 96}
d = {}
for line in open(sys.argv[1]):
    sc, seed, load, p, h, pct, mv = line.split()
    d[(sc, seed, load, p, int(h))] = (float(pct), float(mv))
runs = sorted({k[:3] for k in d})
print("| hour | free GPUs O − TC | TC's GPUs in use | moves O | moves TC |")
print("|---:|---:|---:|---:|---:|")
for h in range(1, 13):
    rows = []
    for k in runs:
        g = GPUS[k[0]]

        def hour(p):
            a = d[k + (p, h)]
            b = d[k + (p, h - 1)] if h > 1 else (0.0, 0.0)
            pct = h * a[0] - (h - 1) * b[0]
            return g * (1 - pct / 100), g * pct / 100, h * a[1] - (h - 1) * b[1]

        fo, _, mo = hour("origamig")
        ft, ut, mt = hour("tc")
        rows.append((fo - ft, ut, mo, mt))
    n = len(rows)
    m = [sum(r[i] for r in rows) / n for i in range(4)]
    print(f"| {h} | {m[0]:+.2f} | {m[1]:.1f} | {m[2]:.1f} | {m[3]:.1f} |")
