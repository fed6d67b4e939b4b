# Summary of r14-ensemble.sh's journals (one a phase): --tuned counts loads 0.9-1.2 (the seed
# 11 of the experiment's held-out part left out), --holdout loads 0.95-1.15 (seed 26 left out).
import json,sys,collections,statistics as st
part=sys.argv[1]
keep=(lambda r: r['seed']!=11 and r['load'] in (0.9,1.0,1.1,1.2)) if part=='--tuned' else (lambda r: r['seed']!=26 and r['load'] in (0.95,1.05,1.15))
out=[]; diffs=[]
for f in sys.argv[2:]:
    by=collections.defaultdict(dict)
    for l in open(f):
        r=json.loads(l)
        if keep(r): by[(r['scenario'],r['load'],r['seed'])][r['policy']]=r
    n=a5=lt=mv=0; d=[]; m=[]
    for k,v in by.items():
        if 'origamig' not in v: continue
        o,t,ff,p=v['origamig'],v['tc'],v['ff'],v['packing']; h=lambda x:x['active_hosts']
        c1=h(o)<h(ff) and h(o)<h(t) and h(o)<h(p); c2=o['acceptance_pct']>=t['acceptance_pct']; c3=o['migrations_per_h']<t['migrations_per_h']
        n+=1; a5+=c1 and c2 and c3; lt+=h(o)<h(t); mv+=c3; d.append(o['free_gpus']-t['free_gpus']); m.append(o['migrations_per_h'])
    out.append((n,a5,lt,mv,st.mean(d),st.mean(m))); diffs+=d
n=out[0][0]
se=st.stdev(diffs)/len(diffs)**0.5
print("n=%d all5 %.1f%% <TC %.1f%% mv<TC %.1f%% | free O-TC %s mean %+.3f (se %.3f) | moves %.2f" % (n, 100*st.mean(o[1] for o in out)/n, 100*st.mean(o[2] for o in out)/n, 100*st.mean(o[3] for o in out)/n, ' '.join('%+.2f'%o[4] for o in out), st.mean(o[4] for o in out), se, st.mean(o[5] for o in out)))
