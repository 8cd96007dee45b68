"""Unexecuted spans inside a kernel's executed code, attributed by a line-info disassembly: CSVDIR SASS FUNC."""
import csv,sys,re,bisect,collections,os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sass_common import read_sass, align
d=sys.argv[1]; sass=sys.argv[2]; func=sys.argv[3]
rows=list(csv.reader(open(d+'/sass.csv')))
hdr=rows[1]; idx={h:i for i,h in enumerate(hdr)}
data=[r for r in rows[2:] if len(r)>=len(hdr)]
ex=[int(r[idx['Instructions Executed']] or 0) for r in data]
ni=[int(r[idx['stall_no_inst']] or 0) for r in data]
n=len(ex)
print('static',n,'executed',sum(1 for e in ex if e>0),'no_inst',sum(ni))
# find runs
runs=[];i=0
while i<n:
    j=i
    while j<n and (ex[j]>0)==(ex[i]>0): j+=1
    runs.append((i,j,ex[i]>0)); i=j
big=[r for r in runs if not r[2] and r[1]-r[0]>=200]
# holes between executed code
first=min(i for i in range(n) if ex[i]>0); last=max(i for i in range(n) if ex[i]>0)
inner=[r for r in big if r[0]>first and r[1]<last]
print('unexecuted holes >=200 instrs inside the executed span:',len(inner),'total',sum(r[1]-r[0] for r in inner),'span',last-first)
# attribute holes via li disassembly alignment
instrs=[(t,c) for _,t,c in read_sass(sass, func)]
amap=align([r[idx['Source']].strip().rstrip(';').strip() for r in data], [t for t,_ in instrs])
for (s,e,_) in sorted(inner,key=lambda r:-(r[1]-r[0]))[:25]:
    c=collections.Counter()
    for k in range(s,e):
        if k in amap and instrs[amap[k]][1]: c['%s:%d'%instrs[amap[k]][1]]+=1
    files=collections.Counter()
    for key,v in c.items(): files[key.split(':')[0]]+=v
    # lines in spec.rs / sampler.rs / exact.rs only, smallest and largest
    own=sorted(int(k.split(':')[1]) for k in c if k.split(':')[0] in ('spec.rs',))
    print('hole %6d-%6d len %5d'%(s,e,e-s), dict(files.most_common(4)), 'spec lines', own[:3], own[-3:] if own else '')
