#!/usr/bin/env bash
# Run 5 (session 36): s2 alone on the GPU: a 25 s soak, then the grid. Written straight to
# $OUT (a run cut short by the device budget still returns what it wrote).
START=$(date +%s); W=$OUT/w; mkdir -p $W
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in *.xz; do unxz $f; done; chmod +x sonic-bench sonic-soak run.sh
md5sum sonic-bench sonic-soak > $W/md5.txt
timeout 40 bash ./run.sh soak --seconds 25 --out $W/soak > $W/soak.log 2>&1; echo "soak rc $? $(el)s"; grep -E "PASSED|FAILED|replays|failures|^\| (start|end)" $W/soak.log
timeout 100 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -A10 "Exact pass against" $W/grid/sonic-bench.md | tail -7
echo "elapsed $(el)"
