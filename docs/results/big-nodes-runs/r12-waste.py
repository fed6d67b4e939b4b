import sys,collections,json
acc=collections.defaultdict(lambda: collections.defaultdict(float)); n=collections.Counter()
for line in open(sys.argv[1]):
    if not line.startswith('WASTE'): continue
    head,arr=line[6:].rsplit(' [[',1) if ' [[' in line else (line[6:],'')
    parts=head.split(); pol=parts[1]
    if len(sys.argv)>2 and sys.argv[2] not in parts[0]: continue
    n[pol]+=1
    for it in ('[['+arr).strip()[1:-1].replace('],[','];[').split(';'):
        v,f,a,x=it.strip('[]').split(',')
        acc[pol][(int(v),int(f),a)]+=float(x)
pols=sorted(acc)
keys=sorted(set(k for p in pols for k in acc[p]))
print("key(vms,free,active)", *pols)
for k in keys:
    row=[acc[p][k]/n[p] for p in pols]
    if max(row)>=0.005: print(k, *["%.2f"%r for r in row])
for p in pols:
    tot=sum(acc[p].values())/n[p]
    idle=sum(x for k,x in acc[p].items() if k[1]==8 and k[0]==0)/n[p]
    inuse=sum(x for k,x in acc[p].items() if k[0]>0)/n[p]
    waste=sum(x*k[1] for k,x in acc[p].items() if k[0]>0)/n[p]
    print(p,"gpus %.2f idle %.2f inuse %.2f free slices on in-use %.2f (=%.2f GPUs)"%(tot,idle,inuse,waste,waste/8))
