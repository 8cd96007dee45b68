#!/usr/bin/env bash
# Run 6 (session 37): main's benchmark (s2's kernels) with the exact pass's first launch in
# plain stream order (the default, `first`) against every exact launch overlapped (`ov`,
# `--exact-order overlapped`), five rounds, in one call.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run6.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('sonic-bench.xz'), open('sonic-bench','wb'))" && rm sonic-bench.xz
chmod +x sonic-bench run.sh; md5sum sonic-bench > $W/md5.txt
printf '#!/usr/bin/env bash\nexec "$(dirname "$0")/sonic-bench" --exact-order overlapped "$@"\n' > ov-bench; chmod +x ov-bench
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,peaked_topp095:f32:128256:64,peaked_topp095:f32:128256:256,alternating_topp095:f32:128256:64,heterogeneous:f32:128256:8,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,heterogeneous:bf16:151936:256,topk50_topp09_t07:f32:128256:64"
AB_SECONDS=60 timeout 150 bash ./run.sh ab $W/ab "$CELLS" 5 first=./sonic-bench ov=./ov-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
echo "elapsed $(el)"
