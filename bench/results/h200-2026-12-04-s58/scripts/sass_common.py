"""Shared by the sass-*.py scripts: a line-info disassembly's instructions and the alignment of
an Nsight source page's SASS to them (registers, predicates and constants masked)."""
import difflib, re

_INSTR = re.compile(r'/\*([0-9a-f]{4,})\*/\s+(.*?);')
_FILE = re.compile(r'//## File "(.*)", line (\d+)')


def read_sass(path, func):
    """[(address, text, (file, line) or None)] of `func` in `nvdisasm -g` output."""
    lines = open(path).read().split('\n')
    start = [i for i, l in enumerate(lines) if l.startswith('.text.%s:' % func)][0]
    cur, out = None, []
    for l in lines[start + 1:]:
        if l.startswith('.nv.') or l.startswith('\t.section'):
            break
        m = _FILE.search(l)
        if m:
            cur = (m.group(1).split('/')[-1], int(m.group(2)))
            continue
        m = _INSTR.search(l)
        if m:
            out.append((int(m.group(1), 16), m.group(2).strip(), cur))
    return out


def norm(t):
    t = re.sub(r"0x[0-9a-f]+", "X", t)
    t = re.sub(r"\bU?R\d+\b", "R", t)
    return re.sub(r"\bU?P\d\b", "P", t)


def align(profiled, disassembled):
    """{index in `profiled` -> index in `disassembled`} for instruction texts that match."""
    sm = difflib.SequenceMatcher(None, [norm(t) for t in profiled], [norm(t) for t in disassembled], autojunk=False)
    out = {}
    for blk in sm.get_matching_blocks():
        for k in range(blk.size):
            out[blk.a + k] = blk.b + k
    return out
