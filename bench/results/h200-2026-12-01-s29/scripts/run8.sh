#!/usr/bin/env bash
# Run 8 (session 29): racecheck of v7's warp-run test with --force-blocking-launches (the
# sanitizer's own memory: cudf's workaround for sanitizer segfaults), since runs 6 and 7 stopped
# with "process didn't terminate successfully" in its B = 120 case.
START=$(date +%s); W=$OUT/w; mkdir -p $W; trap 'tar czf $OUT/run8.tar.gz -C $W .' EXIT
C=$PWD/.carry; cd $C/b
python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('tests/gpu_sampler.xz'), open('tests/gpu_sampler','wb'))"; chmod +x tests/gpu_sampler
md5sum tests/gpu_sampler > $W/md5.txt
export SONIC_SANITIZE=1; T=gpu_band_rows_taken_in_warp_runs_equal_reference
timeout 200 compute-sanitizer --tool racecheck --force-blocking-launches --error-exitcode 1 ./tests/gpu_sampler $T --test-threads=1 --nocapture > $W/racecheck-warp.log 2>&1; echo "racecheck warp rc $? $(( $(date +%s) - START ))s"; grep -E "RACECHECK SUMMARY|test result|Error|run (None|Some)|hazard" $W/racecheck-warp.log | head -20
free -g > $W/free.txt; dmesg 2>/dev/null | tail -5 > $W/dmesg.txt
echo "elapsed $(( $(date +%s) - START ))"
