import json, random, subprocess, sys, os, collections, statistics as st, hashlib
from concurrent.futures import ThreadPoolExecutor
BIN=os.environ.get('MIGPLAN','target/release/migplan')
D=os.environ.get('OUT','search')
BASE=[l for l in open('docs/results/big-nodes-runs/r7-default.jsonl') if '"policy":"origamig"' not in l]
SPACE={
 'gpu_compaction_toward_fuller':['true','false'],
 'gpu_compaction_moves_per_departure':['0.3','0.35','0.4','0.45','0.5','0.55','0.6','0.7'],
 'gpu_compaction_moves_cap':['2','3','4','6','8'],
 'gpu_compaction_across':['1','2','3'],
 'gpu_compaction_across_budget':['1','2','3','4'],
 'gpu_compaction_min':['1','2','3','5'],
 'gpu_compaction_fewest_vms_first':['true','false'],
 'gpu_compaction_idle_gpu':['true','false'],
 'gpu_compaction_across_tenant':['0','1','2'],
 'm_max_gpus':['16','24','32'],
 'host_emptying_big_vms':['0','2','4'],
}
DEFAULT={'gpu_compaction_toward_fuller':'true','gpu_compaction_moves_per_departure':'0.5','gpu_compaction_moves_cap':'4','gpu_compaction_across':'2','gpu_compaction_across_budget':'2','gpu_compaction_min':'2','gpu_compaction_fewest_vms_first':'true','gpu_compaction_idle_gpu':'false','gpu_compaction_across_tenant':'0','m_max_gpus':'24','host_emptying_big_vms':'0'}
def run(cfg):
    key=hashlib.md5(json.dumps(sorted(cfg.items())).encode()).hexdigest()[:10]
    j=f'{D}/{key}.jsonl'
    if not os.path.exists(j):
        open(j,'w').write(''.join(BASE))
    args=[BIN,'experiment','big-nodes','--seeds','1,2,3','--holdout-seeds','4,5','--holdout-loads','0.95,1.05,1.15','--journal',j]
    for k,v in cfg.items():
        if DEFAULT[k]!=v: args+=['--policy-set',f'{k}={v}']
    subprocess.run(args,stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL,check=True)
    return key, score(j)
TUNED={0.9,1.0,1.1,1.2}
def score(j):
    rows=[json.loads(l) for l in open(j)]
    by=collections.defaultdict(dict)
    for r in rows: by[(r['scenario'],r['load'],r['seed'])][r['policy']]=r
    out={}
    for part in ('tuned','held'):
        ks=[k for k in by if 'origamig' in by[k] and ((k[1] in TUNED)==(part=='tuned'))]
        n=0; fo=[]; ft=[]; mv=[]
        for k in ks:
            d=by[k]; o=d['origamig']
            ok= all(o['active_hosts']<d[p]['active_hosts'] for p in ('ff','tc','packing')) and o['acceptance_pct']>=d['tc']['acceptance_pct'] and o['migrations_per_h']<d['tc']['migrations_per_h']
            n+=ok; fo.append(o['free_gpus']); ft.append(d['tc']['free_gpus']); mv.append(o['migrations_per_h'])
        out[part]=(n,len(ks),st.mean(fo)-st.mean(ft),st.mean(mv))
    return out
def fmt(cfg):
    return ' '.join(f'{k.replace("gpu_compaction_","")}={v}' for k,v in cfg.items() if DEFAULT[k]!=v) or 'default'
if __name__=='__main__':
    mode=sys.argv[1]
    random.seed(int(sys.argv[2]) if len(sys.argv)>2 else 1)
    log=open(f'{D}/log.txt','a')
    if mode=='random':
        n=int(sys.argv[3])
        cfgs=[{k:random.choice(v) for k,v in SPACE.items()} for _ in range(n)]
        with ThreadPoolExecutor(2) as ex:
            for cfg,(key,s) in zip(cfgs, ex.map(run,cfgs)):
                t=s['tuned']; h=s['held']
                line=f"{key} tuned {t[0]}/{t[1]} dfree {t[2]:+.2f} mv {t[3]:.2f} | {fmt(cfg)}"
                print(line, flush=True); log.write(line+'\n'); log.flush()

def climb(start, steps, tag):
    log=open(f'{D}/log.txt','a')
    cur=dict(start); key,s=run(cur)
    def val(s):
        t=s['tuned']
        return t[2] if t[0]>=22 else -9+t[0]*0.01
    best=val(s)
    print(f"start {key} {s['tuned']} {fmt(cur)}", flush=True)
    for step in range(steps):
        nbrs=[]
        for k,vs in SPACE.items():
            for v in vs:
                if v!=cur[k]:
                    c=dict(cur); c[k]=v; nbrs.append(c)
        with ThreadPoolExecutor(2) as ex:
            res=list(ex.map(run,nbrs))
        scored=sorted(((val(s),c,key,s) for c,(key,s) in zip(nbrs,res)), key=lambda x:-x[0])
        v,c,key,s=scored[0]
        line=f"{tag} step {step} best nbr {v:+.3f} (cur {best:+.3f}) {key} tuned {s['tuned']} | {fmt(c)}"
        print(line, flush=True); log.write(line+'\n'); log.flush()
        if v<=best: break
        best=v; cur=c
    return cur
if __name__=='__main__' and sys.argv[1]=='climb':
    start=dict(DEFAULT); 
    for kv in sys.argv[3:]:
        k,v=kv.split('='); start[k]=v
    climb(start, int(sys.argv[2]), 'climb')
