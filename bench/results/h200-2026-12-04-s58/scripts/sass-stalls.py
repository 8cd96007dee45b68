"""Stall samples by reason from Nsight source pages: CSVDIR..."""
import csv,sys
for d in sys.argv[1:]:
    rows=list(csv.reader(open(d+'/sass.csv')))
    hdr=rows[1]
    idx={h:i for i,h in enumerate(hdr)}
    cols=[h for h in hdr if h.startswith('stall_') and 'Not Issued' not in h]
    tot={c:0 for c in cols}
    n=0
    for r in rows[2:]:
        if len(r)<len(hdr): continue
        n+=1
        for c in cols:
            try: tot[c]+=int(r[idx[c]])
            except: pass
    s=sum(tot.values())
    print(d, 'sass lines',n,'samples',s)
    for c,v in sorted(tot.items(),key=lambda x:-x[1])[:8]:
        print('   %-25s %6d %5.1f%%'%(c,v,100*v/max(s,1)))
