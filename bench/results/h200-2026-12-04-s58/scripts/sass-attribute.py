"""Aligns an Nsight source-page SASS (sass.csv) to a line-info disassembly and sums instructions,
executed instructions and stall samples per innermost source function: SASS FUNC [CSVDIR [TOP]]."""
import re,sys,csv,collections,bisect,os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sass_common import read_sass, align
sass_file, func, csvdir = sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv)>3 else None
instrs=read_sass(sass_file, func)
print('instrs',len(instrs), file=sys.stderr)
# fn ranges per file
fnmap={}
def fn_of(f,ln):
    if f not in fnmap:
        import glob
        paths=glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../../../sampler-kernels/src/', f))
        if not paths: fnmap[f]=([],[]); 
        else:
            src=open(paths[0]).read().split('\n'); st=[];nm=[]
            for i,s in enumerate(src):
                m=re.match(r'\s*(pub(\(crate\))?\s+)?(const\s+)?(unsafe\s+)?(extern "ptx-kernel"\s+)?fn\s+(\w+)',s)
                if m: st.append(i+1); nm.append(m.group(6))
                m2=re.match(r'\s*macro_rules!\s+(\w+)',s)
                if m2: st.append(i+1); nm.append('macro '+m2.group(1))
            fnmap[f]=(st,nm)
    st,nm=fnmap[f]
    k=bisect.bisect_right(st,ln)-1
    return f+':'+(nm[k] if k>=0 else '?')
ex=None
if csvdir:
    rows=list(csv.reader(open(csvdir+'/sass.csv')))
    hdr=rows[1]; idx={h:i for i,h in enumerate(hdr)}
    data=[r for r in rows[2:] if len(r)>=len(hdr)]
    amap=align([r[idx['Source']].strip().rstrip(';').strip() for r in data], [t for _,t,_ in instrs])
    ex=[None]*len(instrs); matched=0
    for ka,kb in amap.items():
        r=data[ka]; ex[kb]=(int(r[idx['Instructions Executed']] or 0), int(r[idx['stall_no_inst']] or 0), int(r[idx['Warp Stall Sampling (All Samples)']] or 0)); matched+=1
    print('matched',matched,'of',len(instrs),len(data), file=sys.stderr)
agg=collections.defaultdict(lambda:[0,0,0,0,0])
for i,(ad,t,c) in enumerate(instrs):
    key=fn_of(*c) if c and c[1]>0 else (c[0]+':?' if c else '?')
    a=agg[key]; a[0]+=1
    if ex and ex[i]:
        if ex[i][0]>0: a[1]+=1; a[2]+=ex[i][0]
        a[3]+=ex[i][1]; a[4]+=ex[i][2]
tot=[sum(v[j] for v in agg.values()) for j in range(5)]
print('%-45s %7s %7s %9s %6s %6s'%('fn','static','execd','dyn','noinst','samp'))
print('%-45s %7d %7d %9d %6d %6d'%('TOTAL',*tot))
for k,v in sorted(agg.items(), key=lambda x:-(x[1][1] if ex else x[1][0]))[:int(sys.argv[4]) if len(sys.argv)>4 else 45]:
    print('%-45s %7d %7d %9d %6d %6d'%(k[:45],*v))
