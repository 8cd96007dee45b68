"""Adds ptx_build.rs' ENTRY_DIRECTIVES to a hand-built PTX (for the line-info build): IN OUT."""
import re,sys,os
src=open(os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../../../sampler-host/ptx_build.rs')).read()
pairs=re.findall(r'\("(\w+)", "([^"]+)"\)', src.split('ENTRY_DIRECTIVES')[1].split('];')[0])
ptx=open(sys.argv[1]).read()
for e,d in pairs:
    d=d.replace('\\n','\n')
    h='.entry %s('%e; s=ptx.index(h); c=ptx.index('\n)',s)+2
    ptx=ptx[:c+1]+d+'\n'+ptx[c+1:]
open(sys.argv[2],'w').write(ptx)
print(len(pairs))
