#!/usr/bin/env bash
# Run 1 (session 39), everything in one call (the device was hard to get): d1 = main (v1's
# kernels) with old duplicates folded (ld_global_nc_v8_u32, warp_region_bytes, pad_and_sort!,
# step_params' row-word addresses) and count_masses summing once without a min-p floor.
# A/B of v1 and d1, four rounds; the grid on d1 with FlashInfer's harness after it in the same
# call (first peer rerun since session 4); then on d1 the five GPU test binaries beside
# compute-sanitizer (racecheck, memcheck, initcheck, synccheck over all five binaries).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run1.tar.gz -C $W .' EXIT
el() { echo $(( $(date +%s) - START )); }
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz ../v1/*.xz peers/*.xz; do unxz $f; done; chmod +x tests/* sonic-bench sonic-soak run.sh ../v1/sonic-bench peers/flashinfer_peers
md5sum sonic-bench sonic-soak ../v1/sonic-bench tests/* peers/flashinfer_peers peers/cake.tar.gz > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $W/gpu.txt 2>&1
echo "unpacked $(el)s"
CELLS="flat_topp095:f32:128256:64,flat_topp095:f32:151936:256,flat_full:f32:151936:256,heterogeneous:f32:128256:1,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,topk50_topp09_t07:f32:128256:1,topk50_topp09_t07:f32:128256:64,random_full:f32:128256:64,greedy:f32:128256:64,crowded_topk50:f32:128256:64,verify_uniform:f32:128256:1,verify_uniform:f32:128256:8,verify_uniform:f32:128256:32,verify_uniform:f32:151936:128,verify_hetero:f32:128256:8,verify_hetero:f32:128256:32,verify_sampled:f32:128256:8"
AB_SECONDS=50 timeout 110 bash ./run.sh ab $W/ab "$CELLS" 4 v1=../v1/sonic-bench d1=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(el)s"; cat $W/ab/ab-table.txt
timeout 60 bash ./run.sh bench --out $W/grid > $W/grid.log 2>&1; echo "grid rc $? $(el)s"; grep -A10 "Exact pass against" $W/grid/sonic-bench.md | tail -7
timeout 110 bash ./run.sh flashinfer --out $W/grid/flashinfer-peers.json > $W/flashinfer.log 2>&1; echo "flashinfer rc $? $(el)s"; tail -2 $W/flashinfer.log
mkdir -p san/tests; cp run.sh san/; cp tests/* san/tests/
LEFT=$(( 560 - $(el) - 15 )); echo "sanitizer budget $LEFT s"
(SANITIZE_TOOLS="racecheck memcheck initcheck synccheck" SANITIZE_JOBS=10 SANITIZE_SECONDS=$LEFT timeout $((LEFT + 8)) bash ./san/run.sh sanitize $W/sanitizer > $W/sanitize.log 2>&1; echo "rc $?" >> $W/sanitize.log) &
SP=$!
timeout $LEFT bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(el)s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -12
wait $SP; echo "sanitize $(tail -1 $W/sanitize.log) $(el)s"; cat $W/sanitizer/summary.txt
echo "elapsed $(el)"
