#!/usr/bin/env bash
# Run 9 (session 29): v8 = v7 with a sync_warp between the store of a warp's run end and its
# reads (racecheck's warnings in run 8). Every GPU test binary; racecheck (no
# --force-blocking-launches) and memcheck of the warp-run test; A/B of base, v7, v8 and v8b
# (v8 with exact_bins always one block per SM: is exact_bins_two_per_sm what slows the
# heterogeneous and peaked B 256 cells?).
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run9.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3],'wb'))" "$1" && rm "$1"; }
for f in tests/*.xz *.xz; do unxz $f; done; chmod +x tests/* *-bench sonic-bench run.sh
md5sum *-bench sonic-bench tests/* > $W/md5.txt
timeout 200 bash ./run.sh > $W/tests.log 2>&1; echo "tests rc $? $(( $(date +%s) - START ))s"; tail -1 $W/tests.log; grep -E "test result|FAILED|panicked|mismatch" $W/tests.log | head -20
export SONIC_SANITIZE=1; T=gpu_band_rows_taken_in_warp_runs_equal_reference
for tool in racecheck memcheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 1 ./tests/gpu_sampler $T --test-threads=1 --nocapture > $W/$tool-warp.log 2>&1; echo "$tool rc $? $(( $(date +%s) - START ))s"; grep -E "SUMMARY|test result|Error|Warning" $W/$tool-warp.log | head -8
done
unset SONIC_SANITIZE
CELLS="flat_topp095:f32:128256:1,flat_topp095:f32:128256:64,flat_topp095:f32:128256:256,flat_topp095:f32:151936:64,flat_topp095:f32:151936:256,peaked_topp095:f32:128256:64,peaked_topp095:f32:128256:256,heterogeneous:f32:128256:64,heterogeneous:f32:128256:256,flat_full:f32:128256:1,flat_full:f32:128256:64,flat_full:f32:128256:256"
AB_SECONDS=60 timeout 150 bash ./run.sh ab $W/ab "$CELLS" 2 base=./base-bench v7=./v7-bench v8=./sonic-bench v8b=./v8b-bench > $W/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - START ))s"; cat $W/ab/ab-table.txt
echo "elapsed $(( $(date +%s) - START ))"
