"""Counts the distinct 128-byte lines an Nsight source page shows executed, and their runs: CSVDIR..."""
import csv,sys
for d in sys.argv[1:]:
    rows=list(csv.reader(open(d+'/sass.csv')))
    hdr=rows[1]; idx={h:i for i,h in enumerate(hdr)}
    data=[r for r in rows[2:] if len(r)>=len(hdr)]
    base=int(data[0][idx['Address']],16)
    ex=[(int(r[idx['Address']],16)-base, int(r[idx['Instructions Executed']] or 0), int(r[idx['stall_no_inst']] or 0)) for r in data]
    lines=sorted(set(a//128 for a,e,_ in ex if e>0))
    # runs of consecutive lines allowing gap of g lines
    for g in (1,2,4,8):
        runs=1
        for i in range(1,len(lines)):
            if lines[i]-lines[i-1]>g: runs+=1
        print(d.split('/')[-1][:50], 'gap<=%d lines: runs %d'%(g,runs), 'lines',len(lines))
