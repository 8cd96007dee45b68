#!/usr/bin/env python3
"""Lists one kernel's SASS with each instruction's scheduling fields, decoded from the control
bits nvdisasm -hex prints (bits 41-63 of each instruction's second word, sm_70 and later):
stall cycles, write scoreboard (wb: the scoreboard a variable-latency result sets), read
scoreboard (rb: the one a memory instruction's source operands hold until read) and the wait
mask (the scoreboards this instruction waits for). Usage: scoreboards.py CUBIN KERNEL [FILTER]
prints every instruction, or with FILTER=mem only global/shared memory and cp.async
instructions plus every instruction that waits on a scoreboard a global load or copy sets."""
import re
import subprocess
import sys

cubin, kernel = sys.argv[1], sys.argv[2]
only_mem = len(sys.argv) > 3 and sys.argv[3] == "mem"
out = subprocess.run(["nvdisasm", "-hex", "-c", cubin], capture_output=True, text=True, check=True).stdout
lines = out.split("\n")
start = next(i for i, l in enumerate(lines) if l.startswith(f".text.{kernel}:"))
end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith(".text.")), len(lines))
rows = []
i = start
while i < end:
    m = re.search(r"/\*([0-9a-f]{4,})\*/\s+(.*?);\s+/\* (0x[0-9a-f]{16}) \*/", lines[i])
    if m:
        hi = int(re.search(r"/\* (0x[0-9a-f]{16}) \*/", lines[i + 1]).group(1), 16)
        ctrl = hi >> 41
        rows.append((m.group(1), m.group(2).strip(), ctrl & 0xF, (ctrl >> 5) & 7, (ctrl >> 8) & 7, (ctrl >> 11) & 0x3F))
        i += 2
    else:
        i += 1
global_sb = {wb for _, text, _, wb, _, _ in rows if wb != 7 and ("LDG" in text or "LD.E" in text)}
for addr, text, stall, wb, rb, wait in rows:
    mem = any(k in text for k in ("LDG", "LD.E", "LDS", "STS", "ATOMS", "LDGSTS", "DEPBAR"))
    waits_global = any(wait >> sb & 1 for sb in global_sb)
    if only_mem and not (mem or waits_global):
        continue
    sbs = [str(b) for b in range(6) if wait >> b & 1]
    print(f"{addr:>6} {text[:70]:70s} stall={stall:<2} wb={'-' if wb == 7 else wb} rb={'-' if rb == 7 else rb} waits={','.join(sbs) or '-'}")
