#!/usr/bin/env bash
# Run 3 (session 45), one call, on the final build (y5, this bundle's sonic-bench): Nsight source
# counters (one launch, --set full, SASS per instruction) of verify_rows at heterogeneous
# B = 128 and of verify_draws at uniform B = 128, the two largest kernels of the calls where
# verification is furthest from its goals; for the next session's choice of work.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run3.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
unxz sonic-bench.xz; chmod +x sonic-bench run.sh
md5sum sonic-bench > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
mkdir -p $W/source
timeout 150 bash ./run.sh profile-source verify_hetero:f32:128256:128 verify_rows $W/source > $W/source/verify_hetero-f32-128256-128-verify_rows.log 2>&1; echo "rows rc $? $(el)s"; tail -4 $W/source/verify_hetero-f32-128256-128-verify_rows.log
timeout 150 bash ./run.sh profile-source verify_uniform:f32:128256:128 verify_draws $W/source > $W/source/verify_uniform-f32-128256-128-verify_draws.log 2>&1; echo "draws rc $? $(el)s"; tail -4 $W/source/verify_uniform-f32-128256-128-verify_draws.log
echo "elapsed $(el)"
