import csv,sys,collections
f=sys.argv[1]; win=int(sys.argv[2]) if len(sys.argv)>2 else 64
rows=list(csv.reader(open(f)))
hdr=rows[1]; data=rows[2:]
ix={h:i for i,h in enumerate(hdr)}
S=ix["Warp Stall Sampling (All Samples)"]; E=ix["Instructions Executed"]
stall=[h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
tot=0; reasons=collections.Counter(); ex=0
wins=collections.Counter(); winex=collections.Counter(); first={}
for k,r in enumerate(data):
    s=int(r[S] or 0); tot+=s; e=int(r[E] or 0); ex+=e
    for h in stall: reasons[h]+=int(r[ix[h]] or 0)
    w=k//win; wins[w]+=s; winex[w]+=e; first.setdefault(w,r[1].strip()[:50])
print(f"{f}: {len(data)} instrs, samples {tot}, warp instrs executed {ex}")
print("reasons:", ", ".join(f"{h[6:]} {100*v/tot:.1f}%" for h,v in reasons.most_common(9)))
for w,s in sorted(wins.items(), key=lambda x:-x[1])[:12]:
    print(f"  win {w*win:5d}-{w*win+win-1:5d}: {100*s/tot:5.1f}% samples, {winex[w]:7d} exec  first: {first[w]}")
