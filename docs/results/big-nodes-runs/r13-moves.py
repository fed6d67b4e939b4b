"""Sums the move logs of r13-moves.sh over the measured window (after 12 h): moves by kind and
direction, VMs moved again, time from a move to the VM's departure, plans by origin, and the
GPUs OrigaMIG's compaction vacated.
usage: python3 r13-moves.py DIR"""
import collections, glob, os, statistics as st, sys
W = 12 * 3600.0
for pol in ("origamig", "tc"):
    tot = collections.Counter(); left = []; again = []; plans = collections.Counter(); steps = collections.Counter()
    files = sorted(glob.glob(f"{sys.argv[1]}/*-{pol}.log"))
    per_dep = []
    for f in files:
        moves = collections.defaultdict(list); dep = {}; kind = {}
        for line in open(f):
            p = line.split(); t = float(p[0])
            if p[1] == "M":
                moves[p[2]].append((t, p[3], p[4])); kind[p[2]] = p[5]
            elif p[1] == "D":
                dep[p[2]] = t
            elif p[1] == "P" and t >= W:
                plans[p[3]] += 1; steps[p[3]] += int(p[2])
        n_dep = sum(1 for t in dep.values() if t >= W)
        n_mov = sum(1 for ms in moves.values() for (t, _, _) in ms if t >= W)
        per_dep.append((os.path.basename(f)[: -len(f"-{pol}.log")], n_mov / n_dep))
        for vm, ms in moves.items():
            for i, (t, a, b) in enumerate(ms):
                if t < W:
                    continue
                tot["moves"] += 1
                tot[kind[vm].lower()] += 1
                tot["across hosts" if a != b else "within a host"] += 1
                if i > 0:
                    tot["VM moved before"] += 1; again.append((t - ms[i - 1][0]) / 3600)
                    if ms[i - 1][1] == b:
                        tot["back to the host it came from"] += 1
                if vm in dep:
                    left.append((dep[vm] - t) / 3600)
                else:
                    tot["still running at the end"] += 1
    print(f"{pol}: {len(files)} runs, measured 12 h each")
    for k in ("moves", "job", "tenant", "across hosts", "within a host", "VM moved before",
              "back to the host it came from", "still running at the end"):
        print(f"  {k}: {tot[k]}")
    print(f"  hours from a move to the VM's departure (VMs that left): n = {len(left)}, median "
          f"{st.median(left):.2f}, within 0.5 h {sum(x < 0.5 for x in left)}, within 1 h {sum(x < 1 for x in left)}")
    print(f"  hours since the VM's previous move (moved before): median {st.median(again):.2f}, "
          f"within 1 h {sum(x < 1 for x in again)}")
    print("  moves per departure, run by run: " + ", ".join(f"{n} {r:.3f}" for n, r in per_dep))
    for o in sorted(plans):
        print(f"  plans {o}: {plans[o]}, steps {steps[o]}")
    if pol == "origamig":
        # One line a GPU the compaction vacated: time, VMs moved, each one's destination
        # (within its host, to a fuller host, or an exact fill to another host).
        by_vms = collections.Counter(); dest = collections.Counter()
        for f in sorted(glob.glob(f"{sys.argv[1]}/*-{pol}.vacated")):
            for line in open(f):
                t, n, kinds = line.split()
                if float(t) >= W:
                    by_vms[int(n)] += 1
                    for k in kinds.split(","):
                        dest[k] += 1
        print(f"  GPUs the compaction vacated: {sum(by_vms.values())}; by VMs moved: "
              + ", ".join(f"{n}: {c}" for n, c in sorted(by_vms.items())))
        print("  their moves by destination: " + ", ".join(f"{k}: {dest[k]}" for k in ("within", "fuller", "exact")))
