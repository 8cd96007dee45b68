#!/usr/bin/env bash
# Run 6 (session 29): the build to land, v7 = v6 with the warp-row path in its own builds,
# exact_histogram_runs and exact_gather_runs, which the host launches for steps of enough rows
# (smaller steps get the block-path builds of session 27). Every GPU test binary; A/B of base
# (main) and v7; memcheck and racecheck of the warp-run test.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run6.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench sonic-bench run.sh
md5sum *-bench sonic-bench tests/* > $W/md5.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $W/gpu.txt
timeout 300 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -20; grep -E "run (None|Some)" $W/tests.log | head -12
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:151936:1,flat_topp095:f32:128256:8,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,peaked_topp095:f32:128256:64,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,flat_full:f32:128256:64,flat_full:f32:128256:256,flat_full:f32:151936:64,flat_full:f32:151936:256"
AB_SECONDS=80 timeout 200 bash ./run.sh ab $W/ab "$CELLS" 3 base=./base-bench v7=./sonic-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
grep -h "module loaded" $W/ab/*.log | sort | uniq -c
export SONIC_SANITIZE=1; T=gpu_band_rows_taken_in_warp_runs_equal_reference
for tool in memcheck racecheck; do
  left=$(( 585 - ($(date +%s) - START) )); [ $left -gt 20 ] || break
  timeout $left compute-sanitizer --tool $tool --error-exitcode 1 ./tests/gpu_sampler $T --test-threads=1 > $W/$tool-warp.log 2>&1; echo "$tool rc $? $(( $(date +%s) - START ))s"; grep -E "ERROR SUMMARY|test result" $W/$tool-warp.log
done
echo "elapsed $(( $(date +%s) - START ))"
