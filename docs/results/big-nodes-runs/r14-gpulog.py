# Sums the GPULOG files of r14-gpulog.sh per policy: per run, over the measured window
# (12 h to 24 h), the GPUs opened and closed by cause (A: an arrival, D: a departure,
# M: a migration), the time-averaged GPUs in use, and the mean time in use of a GPU that closed.
import sys, glob, collections, os
W0, W1 = 43200, 86400
res = collections.defaultdict(collections.Counter)
for f in sorted(glob.glob(sys.argv[1] + '/*.log')):
    pol = os.path.basename(f)[:-4].split('-')[-1]
    state = {}; used = 0; last = 0; area = 0.0
    c = res[pol]
    for l in open(f):
        t, i, b, k = l.split(); t = float(t); i = int(i); b = int(b)
        if t > W0:
            area += used * (t - max(last, W0))
        last = max(last, t)
        used += 1 if b else -1
        if t >= W0:
            c[('opened by ' if b else 'closed by ') + k] += 1
            if not b and i in state:
                c['busy_s'] += t - state[i]; c['busy_n'] += 1
        if b:
            state[i] = t
    area += used * (W1 - max(last, W0))
    c['used'] += area / (W1 - W0); c['runs'] += 1
for pol, c in sorted(res.items()):
    n = c['runs']
    parts = ', '.join('%s %.1f' % (k, c[k] / n) for k in sorted(c) if k.startswith(('opened', 'closed')))
    print('%s: %d runs; per run: GPUs in use %.2f on average; %s; mean time in use of a GPU that closed %.2f h'
          % (pol, n, c['used'] / n, parts, c['busy_s'] / max(1, c['busy_n']) / 3600))
